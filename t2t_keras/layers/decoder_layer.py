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
            config["norm_position"], config["dropout"], config["norm_epsilon"], dtype=policy
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
        x, self_extras = self.attention_block.wrap(
            x, lambda h: self.self_attention(h, bias=self_bias, **self_args, **options), training
        )
        # Encoder-decoder attention block.
        x, memory_extras = self.memory_block.wrap(
            x,
            lambda h: self.memory_attention(h, bias=memory_bias, **memory_args, **options),
            training,
        )
        # Feed-forward block.
        x, _ = self.feed_forward_block.wrap(
            x, lambda h: self.feed_forward(h, training=training), training
        )
        outputs = [x]
        if cache:
            outputs.append({"self": self_extras[0], "memory": cache["memory"]})
        if return_weights:
            outputs.append((self_extras[-1], memory_extras[-1]))
        return tuple(outputs) if len(outputs) > 1 else x
