"""What the slot search carries between its steps and calls: the slots, what a call
finished, and the row operations on both (`slot_loop`, `slot_parts`).

Shapes: N slots, M sentences per block, K beams, R hypotheses returned, S
source width, L output positions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from t2t_keras.layers.shape_list import shape_list
from t2t_keras.models.decoding import DecodingMemory


class Slots(NamedTuple):
    """The N slots: their sentences' searches and what each step reads of them."""

    search: Any  # BeamState or GreedyState over the N slots
    memory: DecodingMemory  # each slot's encoder output (`Transformer.encode_for_decoding`)
    inputs: tf.Tensor  # [N, S] each slot's input ids
    max_lengths: tf.Tensor  # [N] most tokens before EOS
    min_lengths: tf.Tensor  # [N] fewest tokens before EOS
    sentence: tf.Tensor  # [N] int32: the sentence in the slot (the caller's number), -1 none
    # Sampling's: [N] int32 each slot's stream and seed (a server's, whose requests each
    # have their own); () for the sentence's number and the settings' seed.
    streams: Any = ()
    seeds: Any = ()


class Finished(NamedTuple):
    """The sentences a call finished, in the order they finished; rows past `count` unused."""

    count: tf.Tensor  # int32
    slot_steps: tf.Tensor  # int32: steps x N, and those that advanced a sentence not done
    busy_steps: tf.Tensor
    sentence: tf.Tensor  # [N + M] int32: the caller's numbers
    ids: tf.Tensor  # [N + M, R, L] int32
    scores: tf.Tensor  # [N + M, R] float32
    # [N + M] bool: the sentence needed more positions than the slots hold; its
    # ids and scores are not a result (`SlotLoop.empty`).
    evicted: tf.Tensor


def without_spare_row(finished: Finished) -> Finished:
    """finished without its last row, where the unfinished were written."""
    return finished._replace(
        sentence=finished.sentence[:-1],
        ids=finished.ids[:-1],
        scores=finished.scores[:-1],
        evicted=finished.evicted[:-1],
    )


def row_count(tensor: tf.Tensor) -> int | tf.Tensor:
    """The first dimension, static when known."""
    return tensor.shape[0] if tensor.shape[0] is not None else tf.shape(tensor)[0]


def where_rows(taken: tf.Tensor, new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    """old with the rows of the slots taken [N] from new (each N or N * K rows, slot-major)."""
    slots = row_count(taken)
    merged = tf.where(
        taken[:, tf.newaxis], tf.reshape(new, [slots, -1]), tf.reshape(old, [slots, -1])
    )
    return tf.ensure_shape(tf.reshape(merged, shape_list(old)), old.shape)


def take_rows(taken: tf.Tensor, source: tf.Tensor, new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    """old [N or N * K, ...] with the slots taken [N] holding sentence source [N] of new
    [M or M * K, ...] (its rows sentence-major)."""
    sentences = tf.reshape(
        new, [-1, tf.reduce_prod(tf.shape(old)[1:]) * (row_count(old) // row_count(taken))]
    )
    return where_rows(taken, tf.gather(sentences, source), old)
