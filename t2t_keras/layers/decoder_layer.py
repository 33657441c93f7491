"""One decoder layer: masked self-attention, encoder-decoder attention, feed-forward."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_keras.layers.attention import MultiHeadAttention
from t2t_keras.layers.encoder_layer import EncoderLayer
from t2t_keras.layers.residual import Residual


class DecoderLayer(EncoderLayer):
    """An encoder layer with encoder-decoder attention between its two sub-layers.

    Same arguments as EncoderLayer. Called on a whole target sequence
    (training, scoring) or, with a cache, on one position per decoding step:
      cache = {"self": {"key", "value"}: [B, H, L, K|V], preallocated,
               "memory": {"key", "value"}: [B, H, S, K|V], from `project_memory`}.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config, policy = self.config, self.dtype_policy
        self.memory_attention = MultiHeadAttention(
            config["num_heads"],
            config["key_depth"],
            config["value_depth"],
            config["attention_dropout"],
            config["use_xla"],
            dtype=policy,
            name="memory_attention",
        )
        self.memory_block = Residual(
            config["norm_position"],
            config["dropout"],
            config["norm_epsilon"],
            dtype=policy,
            name="memory_attention_block",
        )

    def build(self, x_shape: Any, memory_shape: Any = None) -> None:
        super().build(x_shape)
        self.memory_attention.build(x_shape, memory_shape or x_shape)
        self.memory_block.build(x_shape)

    def project_memory(self, memory: tf.Tensor) -> dict[str, tf.Tensor]:
        """Encoder-decoder keys and values of the encoder output [B, S, D], once per sentence."""
        return self.memory_attention.project_memory(memory)

    def call(
        self,
        x: tf.Tensor,
        memory: tf.Tensor | None,
        self_bias: tf.Tensor,
        memory_bias: tf.Tensor,
        cache: dict[str, Any] | None = None,
        cache_index: tf.Tensor | int | None = None,
        training: bool = False,
        return_weights: bool = False,
    ) -> Any:
        """x [B, T, D] (T = 1 with a cache) -> [B, T, D].

        Returns:
          x; then the updated cache if one was given; then (self-attention,
          encoder-decoder attention) weights [B, H, T, L|S] if return_weights.
        """
        self_args = {"cache": cache["self"], "cache_index": cache_index} if cache else {}
        memory_args = {"cache": cache["memory"]} if cache else {"memory": memory}
        options = {"training": training, "return_weights": return_weights}
        # Masked self-attention block.
        h = self.attention_block.sublayer_input(x)
        self_result = self.self_attention(h, bias=self_bias, **self_args, **options)
        h = self_result[0] if isinstance(self_result, tuple) else self_result
        x = self.attention_block(x, h, training=training)
        # Encoder-decoder attention block.
        h = self.memory_block.sublayer_input(x)
        memory_result = self.memory_attention(h, bias=memory_bias, **memory_args, **options)
        h = memory_result[0] if isinstance(memory_result, tuple) else memory_result
        x = self.memory_block(x, h, training=training)
        # Feed-forward block.
        h = self.feed_forward(self.feed_forward_block.sublayer_input(x), training=training)
        x = self.feed_forward_block(x, h, training=training)
        outputs = [x]
        if cache:
            outputs.append({"self": self_result[1], "memory": cache["memory"]})
        if return_weights:
            outputs.append((self_result[-1], memory_result[-1]))
        return tuple(outputs) if len(outputs) > 1 else x
