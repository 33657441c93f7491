"""One decoder layer: masked self-attention, encoder-decoder attention, feed-forward."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_keras.layers.attention import KeysValues
from t2t_keras.layers.transformer_layer import Attend, TransformerLayer

# {"self": KeysValues [B, H, G, L, K|V], preallocated by `empty_cache`,
#  "memory": KeysValues [B, H, S, K|V], from `project_memory`}, for B
# sentences of G rows (beams) each.
DecoderCache = dict[str, KeysValues]


class DecoderLayer(TransformerLayer):
    """Masked self-attention, encoder-decoder attention and feed-forward sub-layers.

    Each sub-layer sits inside a residual block. Arguments as TransformerLayer's.
    Shapes: B batch, T target length, S source length, L cache length, D model
    width, H heads, K|V key|value depth per head, G rows (beams) per sentence
    while decoding. Three modes:
      - full: `layer(x [B, T, D], memory [B, S, D], self_bias, memory_bias)`
        -> [B, T, D], for training and scoring; `call_with_weights` also
        returns the attention weights.
      - prefill: `project_memory(memory)` once per sentence gives the cache's
        encoder-decoder keys and values, shared by a sentence's G rows;
        `empty_cache(B, L, G)` its zeroed self-attention slots.
      - one step: `decode_step(x [B * G, 1, D], cache, ..., index)` ->
        ([B * G, 1, D], cache with slot `index` of every row written).
    """

    def build(self, x_shape: Any, memory_shape: Any = None) -> None:
        self._build_self_attention(x_shape)
        self.memory_attention = self._make_attention("memory_attention")
        self.memory_attention.build(x_shape, memory_shape or x_shape)
        self.memory_block = self._make_block("memory_attention_block")
        self.memory_block.build(x_shape)
        self._build_feed_forward(x_shape)

    def call(
        self,
        x: tf.Tensor,
        memory: tf.Tensor,
        self_bias: tf.Tensor,
        memory_bias: tf.Tensor,
        training: bool = False,
    ) -> tf.Tensor:
        """Teacher-forced: x [B, T, D] attends to itself and memory [B, S, D] -> [B, T, D].

        Args:
          self_bias: causal, [1, 1, T, T].
          memory_bias: source padding, [B, 1, 1, S].
        """
        x, _, _ = self._sublayers(
            x,
            lambda h: (self.self_attention(h, bias=self_bias, training=training), None),
            lambda h: (
                self.memory_attention(h, memory=memory, bias=memory_bias, training=training),
                None,
            ),
            training,
        )
        return x

    def call_with_weights(
        self,
        x: tf.Tensor,
        memory: tf.Tensor,
        self_bias: tf.Tensor,
        memory_bias: tf.Tensor,
        training: bool = False,
    ) -> tuple[tf.Tensor, tuple[tf.Tensor, tf.Tensor]]:
        """`call`, also returning the weights.

        Returns:
          ([B, T, D], (self-attention weights [B, H, T, T], encoder-decoder
          weights [B, H, T, S])), float32 weights.
        """
        x, self_weights, memory_weights = self._sublayers(
            x,
            lambda h: self.self_attention.call_with_weights(h, bias=self_bias, training=training),
            lambda h: self.memory_attention.call_with_weights(
                h, memory=memory, bias=memory_bias, training=training
            ),
            training,
        )
        return x, (self_weights, memory_weights)

    def project_memory(self, memory: tf.Tensor) -> KeysValues:
        """Encoder-decoder keys and values of the encoder output [B, S, D], once per sentence."""
        return self.memory_attention.project_memory(memory)

    def empty_cache(
        self, batch_size: int | tf.Tensor, length: int | tf.Tensor, rows: int = 1
    ) -> KeysValues:
        """Zeroed self-attention slots for L = `length` positions of G = `rows`: [B, H, G, L, K|V]."""
        return self.self_attention.empty_cache(batch_size, length, rows)

    def decode_step(
        self,
        x: tf.Tensor,
        cache: DecoderCache,
        self_bias: tf.Tensor,
        memory_bias: tf.Tensor,
        index: tf.Tensor | int,
    ) -> tuple[tf.Tensor, DecoderCache]:
        """Position `index` alone, attending to the cached positions before it.

        Args:
          x: [B * G, 1, D], the layer's input at position `index`.
          cache: {"self": [B, H, G, L, K|V], "memory": [B, H, S, K|V]}.
          self_bias: [B|1, 1, G, G * L], the slots each row sees (see
            `masks.beam_step_bias`), none after `index`.
          memory_bias: [B, 1, 1, S], masking source padding.
          index: the position below L, one for all sentences or [B], each sentence's own.

        Returns:
          (output [B * G, 1, D], the cache with each row's self-attention
          key and value for this position in its slot `index`).
        """
        x, self_cache, _ = self._sublayers(
            x,
            lambda h: self.self_attention.call_cached(
                h, cache["self"], self_bias, cache_index=index
            ),
            lambda h: self.memory_attention.call_cached(h, cache["memory"], memory_bias),
            training=False,
        )
        return x, {"self": self_cache, "memory": cache["memory"]}

    def _sublayers(
        self, x: tf.Tensor, attend_self: Attend, attend_memory: Attend, training: bool
    ) -> tuple[tf.Tensor, Any, Any]:
        """x [B, T, D] through the three sub-layers -> (x, what each `attend` returned beside h)."""
        # Masked self-attention block.
        h, self_extra = attend_self(self.attention_block.sublayer_input(x))
        x = self.attention_block(x, h, training=training)
        # Encoder-decoder attention block.
        h, memory_extra = attend_memory(self.memory_block.sublayer_input(x))
        x = self.memory_block(x, h, training=training)
        # Feed-forward block.
        return self._apply_feed_forward(x, training), self_extra, memory_extra
