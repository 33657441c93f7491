"""Greedy search: the most probable allowed token at every position (`rules` has the rules)."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.search.rules import (
    StepFunction,
    batch_size,
    length_penalty,
    masked_log_probs,
    previous_tokens,
)
from t2t_keras.search.tree_constraint import TreeConstraint


class GreedyState(NamedTuple):
    """What greedy search carries from one position to the next."""

    index: tf.Tensor  # the position decoded next
    ids: tf.Tensor  # [B, L] the tokens so far, PAD after
    log_probs: tf.Tensor  # [B] their log-probability
    finished: tf.Tensor  # [B] bool: EOS has been chosen
    model_state: Any  # the step function's state
    tree: Any  # the constraint's TreeState; () without one


def greedy_search(
    step: StepFunction,
    state: Any,
    decode_length: int | tf.Tensor,
    max_lengths: tf.Tensor,
    alpha: float,
    min_lengths: tf.Tensor | None = None,
    penalty: str = "gnmt",
    constraint: TreeConstraint | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The most probable (allowed) token at every position.

    Args:
      step: the step function (B rows).
      state: its initial state.
      decode_length: L, static (or a tensor XLA knows as a constant).
      max_lengths: [B] int32, each below L.
      alpha: length penalty exponent of the returned scores.
      min_lengths: [B] int32, each at most max_lengths; None = no minimum.
      penalty: the length penalty's form, "gnmt" or "length" (`length_penalty`).
      constraint: what outputs must be (parse trees), or None.

    Returns:
      (ids [B, 1, L] int32 with EOS then PAD, scores [B, 1] float32).
    """

    search = _GreedySearch(step, decode_length, max_lengths, min_lengths, constraint)
    (final,) = tf.while_loop(
        search.keep_going, lambda now: (search.advance(now),), (search.start(state),)
    )
    lengths = tf.reduce_sum(tf.cast(final.ids != PAD_ID, tf.int32), axis=1)
    scores = final.log_probs / length_penalty(lengths, alpha, penalty)
    return final.ids[:, tf.newaxis], scores[:, tf.newaxis]


@dataclasses.dataclass(frozen=True)
class _GreedySearch:
    """One greedy search's settings, and its loop: `start`, then `advance` while `keep_going`."""

    step: StepFunction
    decode_length: int | tf.Tensor
    max_lengths: tf.Tensor
    min_lengths: tf.Tensor | None
    constraint: TreeConstraint | None

    def start(self, model_state: Any) -> GreedyState:
        batch = batch_size(self.max_lengths)
        return GreedyState(
            index=tf.constant(0),
            ids=tf.zeros([batch, self.decode_length], tf.int32),
            log_probs=tf.zeros([batch]),
            finished=tf.zeros([batch], tf.bool),
            model_state=model_state,
            tree=self.constraint.start(1) if self.constraint is not None else (),
        )

    def keep_going(self, now: GreedyState) -> tf.Tensor:
        return tf.logical_and(now.index < self.decode_length, ~tf.reduce_all(now.finished))

    def advance(self, now: GreedyState) -> GreedyState:
        """One position: each unfinished sentence takes its most probable allowed token."""
        previous = previous_tokens(now.ids, now.index)
        logits, model_state = self.step(now.model_state, now.index, previous, None)
        log_probs = masked_log_probs(
            logits[:, tf.newaxis],
            now.index,
            self.max_lengths,
            self.min_lengths,
            self.constraint,
            now.tree,
        )[:, 0]
        best = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
        tokens = tf.where(now.finished, PAD_ID, best)
        chosen = tf.gather(log_probs, tokens, batch_dims=1)
        position = tf.one_hot(now.index, self.decode_length, dtype=tf.int32)
        tree = now.tree
        if self.constraint is not None:
            tree = self.constraint.advance(tree, tokens[:, tf.newaxis])
        return GreedyState(
            index=now.index + 1,
            ids=now.ids + position * tokens[:, tf.newaxis],
            log_probs=now.log_probs + tf.where(now.finished, 0.0, chosen),
            finished=now.finished | (tokens == EOS_ID),
            model_state=model_state,
            tree=tree,
        )
