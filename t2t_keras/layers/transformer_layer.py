"""What encoder and decoder layers share: arguments, self-attention and feed-forward blocks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from t2t_keras.layers.attention import MultiHeadAttention
from t2t_keras.layers.feed_forward import FeedForward
from t2t_keras.layers.residual import Residual

# An attention sub-layer as a block calls it: h [B, T, D] -> (output [B, T, D],
# what the mode returns beside it: the weights, the cache, or None).
Attend = Callable[[tf.Tensor], tuple[tf.Tensor, Any]]


class TransformerLayer(keras.layers.Layer):
    """Base of EncoderLayer and DecoderLayer: stores their arguments, builds their blocks.

    Args:
      num_heads, key_depth, value_depth: attention shape (H, K, V).
      d_ff: feed-forward inner width.
      dropout: residual dropout; attention_dropout, relu_dropout: inner dropouts.
      norm_position: "post" (the paper) or "pre".
      norm_epsilon: layer norm epsilon.
      use_xla: XLA-compile the attention core.
      initializer_stddev: 0 for Glorot-uniform kernels, else N(0, this).
      activation: the feed-forward block's (`feed_forward.ACTIVATIONS`).
      attention_bias: biases on the attention's query and output projections.
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
        initializer_stddev: float = 0.0,
        activation: str = "relu",
        attention_bias: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_depth = key_depth
        self.value_depth = value_depth
        self.d_ff = d_ff
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.relu_dropout = relu_dropout
        self.norm_position = norm_position
        self.norm_epsilon = norm_epsilon
        self.use_xla = use_xla
        self.initializer_stddev = initializer_stddev
        self.activation = activation
        self.attention_bias = attention_bias

    def _make_attention(self, name: str) -> MultiHeadAttention:
        return MultiHeadAttention(
            self.num_heads,
            self.key_depth,
            self.value_depth,
            self.attention_dropout,
            self.use_xla,
            self.initializer_stddev,
            self.attention_bias,
            dtype=self.dtype_policy,
            name=name,
        )

    def _make_block(self, name: str) -> Residual:
        # Named, so weight paths (and checkpoint keys) do not depend on creation order.
        return Residual(
            self.norm_position, self.dropout, self.norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _build_self_attention(self, x_shape: Any) -> None:
        """Creates and builds the self-attention sub-layer and its residual block."""
        self.self_attention = self._make_attention("self_attention")
        self.self_attention.build(x_shape)
        self.attention_block = self._make_block("self_attention_block")
        self.attention_block.build(x_shape)

    def _build_feed_forward(self, x_shape: Any) -> None:
        """Creates and builds the feed-forward sub-layer and its residual block."""
        self.feed_forward = FeedForward(
            self.d_ff,
            self.relu_dropout,
            self.initializer_stddev,
            self.activation,
            dtype=self.dtype_policy,
            name="feed_forward",
        )
        self.feed_forward.build(x_shape)
        self.feed_forward_block = self._make_block("feed_forward_block")
        self.feed_forward_block.build(x_shape)

    def _apply_feed_forward(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        """The feed-forward sub-layer inside its residual block: [B, T, D] -> [B, T, D]."""
        h = self.feed_forward(self.feed_forward_block.sublayer_input(x), training=training)
        return self.feed_forward_block(x, h, training=training)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_depth": self.key_depth,
            "value_depth": self.value_depth,
            "d_ff": self.d_ff,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "relu_dropout": self.relu_dropout,
            "norm_position": self.norm_position,
            "norm_epsilon": self.norm_epsilon,
            "initializer_stddev": self.initializer_stddev,
            "activation": self.activation,
            "attention_bias": self.attention_bias,
        }
