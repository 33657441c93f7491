"""Incremental decoding: a Transformer's inputs encoded once, then one output position a step.

`IncrementalDecoding` gives `Transformer` what the searches (`t2t_keras.search`)
call: `encode_for_decoding` (what every step reads of the inputs, once per
sentence), `decoding_step` (the step function) and `empty_decoding_state`.
Shapes: B sentences, K beams (rows) per sentence, S input width, L output
positions, D model width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from t2t_keras.layers.attention import slot_indices
from t2t_keras.layers.masks import MASKED, beam_step_bias
from t2t_keras.layers.shape_list import shape_list

# {"layer_i": the self-attention cache of decoder layer i, "ancestors": [B, K, L]
# int32, the beam whose cache slot holds each position of each beam's history,
# and with leaf inputs (parsers) "leaves": [B * K] the leaves each row wrote}
DecodingState = dict[str, Any]
# {"layers": [per decoder layer {"key": [B, H, S, K], "value": [B, H, S, V]}],
# "bias": [B, 1, 1, S], optionally "words": [B * K, S, D]}; see
# `IncrementalDecoding.encode_for_decoding`.
DecodingMemory = dict[str, Any]
# state, index, ids [B * K], parents [B * K] or None -> (logits [B * K, V]
# float32, new state); see `IncrementalDecoding.decoding_step`.
StepFunction = Callable[
    [DecodingState, tf.Tensor, tf.Tensor, tf.Tensor | None], tuple[tf.Tensor, DecodingState]
]


class IncrementalDecoding:
    """The decoding methods of `Transformer` (a mixin: it holds no state of its own)."""

    if TYPE_CHECKING:  # What these methods use of the Transformer they are part of.
        hparams: Any
        decoder_layers: list[Any]
        leaf_word_projection: Any
        word_starts: Any
        target_embedding: Any
        compute_dtype: Any

        def encode(self, inputs: tf.Tensor, training: bool = False) -> tuple[Any, Any]: ...
        def _build_if_needed(self) -> None: ...
        def _embed(self, *args: Any) -> tf.Tensor: ...
        def _logits(self, x: tf.Tensor) -> tf.Tensor: ...
        def _word_memory(self, inputs: tf.Tensor, memory: tf.Tensor) -> tf.Tensor: ...

    def start_decoding(
        self, inputs: tf.Tensor, cache_length: int | tf.Tensor, beam_size: int = 1
    ) -> tuple[DecodingState, StepFunction]:
        """Encodes `inputs` [B, S] once and prepares one-position decoding steps.

        Args:
          inputs: [B, S] ids.
          cache_length: L, the most positions that will be decoded.
          beam_size: K rows (beams) per sentence, rows b * K .. b * K + K - 1.

        Returns:
          (state, step): `empty_decoding_state` and `decoding_step` of
          `encode_for_decoding(inputs)`.
        """
        memory = self.encode_for_decoding(inputs, beam_size)
        batch = shape_list(memory["bias"])[0]
        state = self.empty_decoding_state(batch, cache_length, beam_size)
        return state, self.decoding_step(memory, cache_length, beam_size)

    def encode_for_decoding(self, inputs: tf.Tensor, beam_size: int = 1) -> DecodingMemory:
        """What every decoding step reads of the inputs [B, S], computed once per sentence.

        Returns:
          {"layers": each decoder layer's encoder-decoder keys and values
          [B, H, S, K|V], "bias": [B, 1, 1, S] masking source padding, and
          with leaf-word inputs (parsers) "words": [B * K, S, D], the
          encoding of each row's sentence's words}. Every value's first
          dimension is B (B * K for "words"), so the memories of several
          batches may be merged row by row (`search.slots`).
        """
        self._build_if_needed()
        memory, memory_bias = self.encode(inputs)
        decoding: DecodingMemory = {
            "layers": [layer.project_memory(memory) for layer in self.decoder_layers],
            "bias": memory_bias,
        }
        if self.leaf_word_projection is not None:  # [B * K, S, D]: each row's sentence's.
            decoding["words"] = tf.repeat(self._word_memory(inputs, memory), beam_size, axis=0)
        return decoding

    def empty_decoding_memory(
        self, batch: int | tf.Tensor, width: int | tf.Tensor, beam_size: int = 1
    ) -> DecodingMemory:
        """What `encode_for_decoding` returns for `batch` inputs of `width` ids, without
        encoding any: the memory of sentences not there yet (empty slots)."""
        self._build_if_needed()
        memory = tf.zeros([batch, width, self.hparams.d_model], self.compute_dtype)
        decoding: DecodingMemory = {
            "layers": [layer.project_memory(memory) for layer in self.decoder_layers],
            "bias": tf.zeros([batch, 1, 1, width]),
        }
        if self.leaf_word_projection is not None:
            decoding["words"] = tf.repeat(memory, beam_size, axis=0)
        return decoding

    def widened_decoding_memory(self, memory: DecodingMemory, width: int) -> DecodingMemory:
        """`memory` of inputs [B, S] as that of the same inputs padded to `width` >= S:
        the padding's keys, values and words zero, masked by the bias, so that
        encoding a block at its own width serves slots of a wider one."""
        extra = width - shape_list(memory["bias"])[-1]

        def padded(tensor: tf.Tensor, axis: int, value: float = 0.0) -> tf.Tensor:
            paddings = [[0, 0]] * len(tensor.shape)
            paddings[axis] = [0, extra]
            return tf.pad(tensor, paddings, constant_values=value)

        widened: DecodingMemory = {
            "layers": [{k: padded(v, 2) for k, v in layer.items()} for layer in memory["layers"]],
            "bias": padded(memory["bias"], 3, MASKED),
        }
        if "words" in memory:
            widened["words"] = padded(memory["words"], 1)
        return widened

    def decoding_step(
        self, memory: DecodingMemory, cache_length: int | tf.Tensor, beam_size: int = 1
    ) -> StepFunction:
        """The one-position step over `memory` (`encode_for_decoding`).

        `step(state, index, ids [B * K], parents)` returns (logits [B * K, V]
        float32, new state) for position `index`, one for all sentences or
        [B], each sentence's own (below L), where ids are the tokens at
        index - 1 and parents [B * K] int32 the row each beam continues (beam
        search's reordering; None: each row continues itself). Nothing of
        size L is copied to reorder beams: the K beams of a sentence share
        their self-attention slots, each row writes its own, and the state's
        "ancestors" table, which follows the reordering, says whose slots each
        beam attends to. The encoder's keys and values are computed once per
        sentence, not per beam.
        """
        memory_caches, memory_bias = memory["layers"], memory["bias"]
        words = memory.get("words")
        batch = shape_list(memory_bias)[0]
        own_row = tf.range(beam_size)[tf.newaxis, :, tf.newaxis]

        def step(
            state: DecodingState, index: tf.Tensor, ids: tf.Tensor, parents: tf.Tensor | None
        ) -> tuple[tf.Tensor, DecodingState]:
            index = tf.broadcast_to(tf.cast(index, tf.int32), [batch])  # [B]
            ancestors = follow_parents(state["ancestors"], parents, index, own_row, cache_length)
            new_state = {"ancestors": ancestors}
            leaves = leaf_words = None
            if self.word_starts is not None:
                leaves = state["leaves"] if parents is None else tf.gather(state["leaves"], parents)
                leaves += tf.cast(ids == self.hparams.leaf_id, tf.int32)
                new_state["leaves"] = leaves
                leaf_words = None if words is None else _leaf_words(words, leaves)
                leaves = leaves[:, tf.newaxis]
            row_index = tf.repeat(index, beam_size)[:, tf.newaxis]  # [B * K, 1]
            x = self._embed(
                self.target_embedding, ids[:, tf.newaxis], 1, row_index, False, leaves, leaf_words
            )
            self_bias = beam_step_bias(ancestors, index)
            for i, layer in enumerate(self.decoder_layers):
                cache = {"self": state[f"layer_{i}"], "memory": memory_caches[i]}
                x, cache = layer.decode_step(x, cache, self_bias, memory_bias, index)
                new_state[f"layer_{i}"] = cache["self"]
            return self._logits(x)[:, 0, :], new_state

        return step

    def empty_decoding_state(
        self, batch: tf.Tensor | int, cache_length: int | tf.Tensor, beam_size: int
    ) -> DecodingState:
        """The state before the first step: empty self-attention caches, every
        position of every beam its own row's, and no leaves written yet."""
        state: DecodingState = {
            f"layer_{i}": layer.empty_cache(batch, cache_length, beam_size)
            for i, layer in enumerate(self.decoder_layers)
        }
        state.update(self.fresh_decoding_rows(batch, cache_length, beam_size))
        return state

    def fresh_decoding_rows(
        self, batch: tf.Tensor | int, cache_length: int | tf.Tensor, beam_size: int
    ) -> DecodingState:
        """The state before the first step but for the self-attention caches: what
        a sentence starting afresh in a row of a used state needs (its cache
        slots are all written before they are read)."""
        state: DecodingState = {"ancestors": tf.zeros([batch, beam_size, cache_length], tf.int32)}
        if self.word_starts is not None:  # Each row's leaves before its input token.
            state["leaves"] = tf.zeros([batch * beam_size], tf.int32)
        return state

    def start_one_row(
        self, memory: DecodingMemory, beam_size: int
    ) -> tuple[DecodingState, StepFunction]:
        """(state, step) of position 0 decoded on one row a sentence, for searches of
        beam_size rows over `memory` (`encode_for_decoding(inputs, beam_size)`):
        the cache holds that one position (`first_positions` places it)."""
        if "words" in memory:  # Each row's sentence's words: one row a sentence here.
            memory = {**memory, "words": memory["words"][::beam_size]}
        batch = shape_list(memory["bias"])[0]
        return self.empty_decoding_state(batch, 1, 1), self.decoding_step(memory, 1, 1)

    def first_positions(
        self, state: DecodingState, first: DecodingState, taken: tf.Tensor, source: tf.Tensor
    ) -> DecodingState:
        """`state` (N sentences of K rows) with position 0 of the sentences taken [N]
        written from sentence source [N] of `first`, a state of one row and one
        position a sentence after its position 0 (`decoding_step(memory, 1, 1)`):
        every layer's key and value there go to slot 0 of the sentence's K rows.
        With the sentence's "ancestors" zeros, every beam reads position 0 from
        row 0, as if the beams had searched it together; the other slots are
        written before they are read."""
        written = dict(state)
        for i in range(len(self.decoder_layers)):
            written[f"layer_{i}"] = _first_position(
                state[f"layer_{i}"], first[f"layer_{i}"], taken, source
            )
        return written


def _first_position(
    cache: dict[str, tf.Tensor], first: dict[str, tf.Tensor], taken: tf.Tensor, source: tf.Tensor
) -> dict[str, tf.Tensor]:
    """Each of cache's [N, H, K, L, D] with slot 0 of the K rows of the sentences taken
    [N] set to row source [N] of first's [M, H, 1, 1, D]: a scatter of N * H * K
    vectors, in place inside the compiled loop."""
    written = {}
    for name, tensor in cache.items():
        written[name] = tf.tensor_scatter_nd_update(
            tensor, *first_slots(tensor, first[name], taken, source)
        )
    return written


def first_slots(
    cache: tf.Tensor, first: tf.Tensor, taken: tf.Tensor, source: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """(indices [N, H, K, 4], values [N, H, K, D]) of a scatter into cache [N, H, K, L, D]
    setting slot 0 of the K rows of the sentences taken [N] to row source [N] of
    first [M, H, 1, 1, D], and leaving the others' as they are."""
    sentences, heads, rows = shape_list(cache)[:3]
    new = tf.gather(first[:, :, :, 0], source)  # [N, H, 1, D]
    slot = tf.where(taken[:, tf.newaxis, tf.newaxis, tf.newaxis], new, cache[:, :, :, 0])
    return slot_indices(sentences, heads, rows, 0), slot


def follow_parents(
    ancestors: tf.Tensor,
    parents: tf.Tensor | None,
    index: tf.Tensor,
    own_row: tf.Tensor,
    cache_length: int | tf.Tensor,
) -> tf.Tensor:
    """The [B, K, L] ancestors table of the step at index [B]: each beam takes the
    row of its parent (parents [B * K]; None: its own), and its own row (own_row
    [1, K, 1]) writes its sentence's position index."""
    if parents is not None:
        flat = tf.reshape(ancestors, [-1, cache_length])
        ancestors = tf.reshape(tf.gather(flat, parents), tf.shape(ancestors))
    return tf.where(tf.range(cache_length) == index[:, tf.newaxis, tf.newaxis], own_row, ancestors)


def _leaf_words(words: tf.Tensor, leaves: tf.Tensor) -> tf.Tensor:
    """[B * K, S, D] word encodings, [B * K] leaves written -> [B * K, 1, D]: the
    encoding of the word each row writes next (the last row of words past the end)."""
    last = tf.shape(words)[1] - 1
    return tf.gather(words, tf.minimum(leaves, last), batch_dims=1)[:, tf.newaxis]
