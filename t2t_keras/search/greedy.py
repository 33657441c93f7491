"""Greedy search: the most probable allowed token at every position (`rules` has the rules),
or with a `sampling.Sampler`, one drawn from the allowed tokens' distribution."""

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
    next_index,
    previous_tokens,
    write_position,
)
from t2t_keras.search.sampling import Sampler
from t2t_keras.search.tree_constraint import TreeConstraint


class GreedyState(NamedTuple):
    """What greedy search carries from one position to the next."""

    index: tf.Tensor  # [B] the position each sentence decodes next
    ids: tf.Tensor  # [B, L] the tokens so far, PAD after
    log_probs: tf.Tensor  # [B] their log-probability
    done: tf.Tensor  # [B] bool: EOS has been chosen
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
    sampler: Sampler | None = None,
    streams: tf.Tensor | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The most probable (allowed) token at every position, or one drawn by `sampler`.

    Args:
      step: the step function (B rows).
      state: its initial state.
      decode_length: L, static (or a tensor XLA knows as a constant).
      max_lengths: [B] int32, each below L.
      alpha: length penalty exponent of the returned scores.
      min_lengths: [B] int32, each at most max_lengths; None = no minimum.
      penalty: the length penalty's form, "gnmt" or "length" (`length_penalty`).
      constraint: what outputs must be (parse trees), or None.
      sampler: draws each token (`sampling`); None takes the most probable.
      streams: [B] int32, the sampler's stream of each row; None = the row's index.

    Returns:
      (ids [B, 1, L] int32 with EOS then PAD, scores [B, 1] float32).
    """

    search = GreedySearch(
        step, decode_length, max_lengths, min_lengths, constraint, alpha, penalty, sampler, streams
    )
    (final,) = tf.while_loop(
        search.keep_going, lambda now: (search.advance(now),), (search.start(state),)
    )
    return search.results(final)


@dataclasses.dataclass(frozen=True)
class GreedySearch:
    """One greedy search's settings, and its loop: `start`, then `advance` while
    `keep_going`; `results` once the state says `done`."""

    step: StepFunction
    decode_length: int | tf.Tensor
    max_lengths: tf.Tensor
    min_lengths: tf.Tensor | None
    constraint: TreeConstraint | None
    alpha: float = 0.0
    penalty: str = "gnmt"
    sampler: Sampler | None = None  # Draws each token; None takes the most probable.
    streams: tf.Tensor | None = None  # [B] int32 the sampler's stream of each row; None: its index
    seeds: tf.Tensor | None = None  # [B] int32 the sampler's seed of each row; None: the sampler's

    def start(self, model_state: Any) -> GreedyState:
        batch = batch_size(self.max_lengths)
        return GreedyState(
            index=tf.zeros([batch], tf.int32),
            ids=tf.zeros([batch, self.decode_length], tf.int32),
            log_probs=tf.zeros([batch]),
            done=tf.zeros([batch], tf.bool),
            model_state=model_state,
            tree=self.constraint.start(1) if self.constraint is not None else (),
        )

    def results(self, now: GreedyState) -> tuple[tf.Tensor, tf.Tensor]:
        """(ids [B, 1, L], scores [B, 1]): the tokens and their length-penalized score."""
        lengths = tf.reduce_sum(tf.cast(now.ids != PAD_ID, tf.int32), axis=1)
        scores = now.log_probs / length_penalty(lengths, self.alpha, self.penalty)
        return now.ids[:, tf.newaxis], scores[:, tf.newaxis]

    def keep_going(self, now: GreedyState) -> tf.Tensor:
        return tf.reduce_any(~now.done & (now.index < self.decode_length))

    def advance(self, now: GreedyState) -> GreedyState:
        """One position: each unfinished sentence takes its most probable allowed token
        (or the sampler's draw)."""
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
        if self.sampler is None:
            best = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
        else:
            streams = self.streams
            if streams is None:
                streams = tf.range(batch_size(self.max_lengths), dtype=tf.int32)
            best = self.sampler.draw(log_probs, streams, now.index, self.seeds)
        tokens = tf.where(now.done, PAD_ID, best)
        chosen = tf.gather(log_probs, tokens, batch_dims=1)
        tree = now.tree
        if self.constraint is not None:
            tree = self.constraint.advance(tree, tokens[:, tf.newaxis])
        return GreedyState(
            index=next_index(now.index, now.done),
            ids=write_position(now.ids, now.index, tokens),
            log_probs=now.log_probs + tf.where(now.done, 0.0, chosen),
            done=now.done | (tokens == EOS_ID),
            model_state=model_state,
            tree=tree,
        )
