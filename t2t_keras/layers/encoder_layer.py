"""One encoder layer: self-attention, then the feed-forward block."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from t2t_keras.layers.attention import MultiHeadAttention
from t2t_keras.layers.feed_forward import FeedForward
from t2t_keras.layers.residual import Residual


class EncoderLayer(keras.layers.Layer):
    """Self-attention and feed-forward sub-layers, each inside a residual block.

    Args:
      num_heads, key_depth, value_depth: attention shape (H, K, V).
      d_ff: feed-forward inner width.
      dropout: residual dropout; attention_dropout, relu_dropout: inner dropouts.
      norm_position: "post" (the paper) or "pre".
      norm_epsilon: layer norm epsilon.
      use_xla: XLA-compile the attention core.
    """

    def __init__(
        self,
        num_heads: int,
        key_depth: int,
        value_depth: int,
        d_ff: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        relu_dropout: float = 0.0,
        norm_position: str = "post",
        norm_epsilon: float = 1e-6,
        use_xla: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.config = {
            "num_heads": num_heads,
            "key_depth": key_depth,
            "value_depth": value_depth,
            "d_ff": d_ff,
            "dropout": dropout,
            "attention_dropout": attention_dropout,
            "relu_dropout": relu_dropout,
            "norm_position": norm_position,
            "norm_epsilon": norm_epsilon,
            "use_xla": use_xla,
        }
        policy = self.dtype_policy
        self.self_attention = MultiHeadAttention(
            num_heads,
            key_depth,
            value_depth,
            attention_dropout,
            use_xla,
            dtype=policy,
            name="self_attention",
        )
        self.feed_forward = FeedForward(d_ff, relu_dropout, dtype=policy, name="feed_forward")
        # Named, so weight paths (and checkpoint keys) do not depend on creation order.
        self.attention_block = Residual(
            norm_position, dropout, norm_epsilon, dtype=policy, name="self_attention_block"
        )
        self.feed_forward_block = Residual(
            norm_position, dropout, norm_epsilon, dtype=policy, name="feed_forward_block"
        )

    def build(self, input_shape: Any) -> None:
        for layer in (self.self_attention, self.feed_forward):
            layer.build(input_shape)
        for block in (self.attention_block, self.feed_forward_block):
            block.build(input_shape)

    def call(
        self, x: tf.Tensor, bias: tf.Tensor, training: bool = False, return_weights: bool = False
    ) -> Any:
        """[B, S, D] with a [B, 1, 1, S] padding bias -> [B, S, D] (and weights)."""
        # Self-attention block.
        h = self.attention_block.sublayer_input(x)
        h = self.self_attention(h, bias=bias, training=training, return_weights=return_weights)
        h, weights = h if return_weights else (h, None)
        x = self.attention_block(x, h, training=training)
        # Feed-forward block.
        h = self.feed_forward(self.feed_forward_block.sublayer_input(x), training=training)
        x = self.feed_forward_block(x, h, training=training)
        return (x, weights) if return_weights else x

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), **self.config}
