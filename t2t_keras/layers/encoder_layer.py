"""One encoder layer: self-attention, then the feed-forward block."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_keras.layers.transformer_layer import Attend, TransformerLayer


class EncoderLayer(TransformerLayer):
    """Self-attention and feed-forward sub-layers, each inside a residual block.

    Shapes: B batch, S source length, D model width, H heads. Arguments as
    TransformerLayer's.
    """

    def build(self, input_shape: Any) -> None:
        self._build_self_attention(input_shape)
        self._build_feed_forward(input_shape)

    def call(self, x: tf.Tensor, bias: tf.Tensor, training: bool = False) -> tf.Tensor:
        """[B, S, D] with a [B, 1, 1, S] padding bias -> [B, S, D]."""
        x, _ = self._sublayers(
            x, lambda h: (self.self_attention(h, bias=bias, training=training), None), training
        )
        return x

    def call_with_weights(
        self, x: tf.Tensor, bias: tf.Tensor, training: bool = False
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """`call`, also returning the self-attention weights: ([B, S, D], [B, H, S, S] float32)."""
        return self._sublayers(
            x,
            lambda h: self.self_attention.call_with_weights(h, bias=bias, training=training),
            training,
        )

    def _sublayers(self, x: tf.Tensor, attend: Attend, training: bool) -> tuple[tf.Tensor, Any]:
        """x [B, S, D] through both sub-layers -> (x, what `attend` returned beside h)."""
        # Self-attention block.
        h, extra = attend(self.attention_block.sublayer_input(x))
        x = self.attention_block(x, h, training=training)
        # Feed-forward block.
        return self._apply_feed_forward(x, training), extra
