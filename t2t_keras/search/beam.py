"""Beam search over a one-position-per-step decoder (`rules` has what it shares with greedy).

Beam search takes the 2K best one-token extensions of the K alive beams. Those
among the first K that end in EOS become finished hypotheses (so beam size 1
is greedy search); the best K that do not end stay alive. A sentence is done
when no alive beam can beat the N-th best finished one even at its longest
length (N = the hypotheses the caller wants: 1 stops as early as possible),
or at its length limit, and, under the stopping rule "first_k" (fairseq's,
the default), as soon as it has K finished hypotheses. "first_k" makes beam
size 1 exactly greedy search, at the price that a still-alive beam which
could have scored better is not followed further. "best_possible"
(tensor2tensor's) follows it: it also takes EOS extensions from all 2K
candidates as finished, and stops a sentence only when nothing alive can win.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_keras.data.ids import EOS_ID
from t2t_keras.search.rules import (
    NEG_INF,
    StepFunction,
    batch_size,
    length_penalty,
    masked_log_probs,
    next_index,
    previous_tokens,
    top_k,
    write_position,
)
from t2t_keras.search.settings import STOPPING_RULES
from t2t_keras.search.tree_constraint import TreeConstraint, reorder


class BeamState(NamedTuple):
    """What beam search carries from one position to the next."""

    # [B] int32: the position each sentence decodes next.
    index: tf.Tensor
    # [B, K, L] and [B, K]: the K best hypotheses that did not end, and their
    # log-probabilities (-inf for the beams not yet started).
    alive_ids: tf.Tensor
    alive_log_probs: tf.Tensor
    # [B, K, L] and [B, K]: the K best that ended, best first, and their
    # length-penalized scores (-inf for empty slots).
    finished_ids: tf.Tensor
    finished_scores: tf.Tensor
    # [B] bool: the sentence's search is over.
    done: tf.Tensor
    # [B * K] int32: the row of the previous step each row continues.
    parents: tf.Tensor
    # The step function's state, and the constraint's (a TreeState; () without one).
    model_state: Any
    tree: Any


class _Candidates(NamedTuple):
    """The 2K best one-token extensions of the alive beams, best first."""

    log_probs: tf.Tensor  # [B, 2K]
    origins: tf.Tensor  # [B, 2K]: the beam each extends
    tokens: tf.Tensor  # [B, 2K]
    ids: tf.Tensor  # [B, 2K, L]


def beam_search(
    step: StepFunction,
    state: Any,
    beam_size: int,
    decode_length: int | tf.Tensor,
    max_lengths: tf.Tensor,
    alpha: float,
    num_returned: int | None = None,
    min_lengths: tf.Tensor | None = None,
    stopping: str = "first_k",
    penalty: str = "gnmt",
    constraint: TreeConstraint | None = None,
) -> tuple[tf.Tensor, tf.Tensor]:
    """The best (allowed) hypotheses per sentence under the length penalty.

    Args:
      step: the step function (B * K rows, sentence-major).
      state: its initial state.
      beam_size: K.
      decode_length: L, static (or a tensor XLA knows as a constant).
      max_lengths: [B] int32, each below L.
      alpha: length penalty exponent.
      num_returned: N <= K, how many of the best hypotheses are returned;
        the search runs until these are final. Defaults to K.
      min_lengths: [B] int32, each at most max_lengths; None = no minimum.
      stopping: "first_k" or "best_possible", when a sentence is done (above).
      penalty: the length penalty's form, "gnmt" or "length" (`length_penalty`).
      constraint: what outputs must be (parse trees), or None.

    Returns:
      (ids [B, N, L] int32 with EOS then PAD, best first; scores [B, N]
      float32, -inf for slots left empty when fewer hypotheses exist).
    """
    if stopping not in STOPPING_RULES:
        raise ValueError(f"stopping must be one of {STOPPING_RULES}, not {stopping!r}")
    search = BeamSearch(
        step, beam_size, decode_length, max_lengths, min_lengths, alpha, penalty, stopping,
        num_returned or beam_size, constraint,
    )  # fmt: skip
    (final,) = tf.while_loop(
        search.keep_going, lambda beams: (search.advance(beams),), (search.start(state),)
    )
    return search.results(final)


@dataclasses.dataclass(frozen=True)
class BeamSearch:
    """One beam search's settings, and its loop: `start`, then `advance` while
    `keep_going`; `results` once `done` (`search.slots` runs the same loop, each
    sentence in a row of its own from when the row frees)."""

    step: StepFunction
    beams: int
    decode_length: int | tf.Tensor
    max_lengths: tf.Tensor
    min_lengths: tf.Tensor | None
    alpha: float
    penalty: str
    stopping: str
    num_returned: int
    constraint: TreeConstraint | None

    @property
    def batch(self) -> int | tf.Tensor:
        return batch_size(self.max_lengths)

    def start(self, model_state: Any) -> BeamState:
        batch, beams, length = self.batch, self.beams, self.decode_length
        first_beam_only = tf.concat([[0.0], tf.fill([beams - 1], NEG_INF)], axis=0)
        return BeamState(
            index=tf.zeros([batch], tf.int32),
            alive_ids=tf.zeros([batch, beams, length], tf.int32),
            alive_log_probs=tf.tile(first_beam_only[tf.newaxis], [batch, 1]),
            finished_ids=tf.zeros([batch, beams, length], tf.int32),
            finished_scores=tf.fill([batch, beams], NEG_INF),
            done=tf.zeros([batch], tf.bool),
            parents=tf.range(batch * beams),
            model_state=model_state,
            tree=self.constraint.start(beams) if self.constraint is not None else (),
        )

    def after_first_position(self, one_row: StepFunction, state: Any) -> BeamState:
        """The search after position 0 with the step run on one row a sentence.

        Until its first token a sentence's K beams are one (the search starts
        from beam 0 alone), so its first position needs the decoder on one
        row, not K (CTranslate2 does the same on a CPU). one_row(state, index,
        ids [B], None) -> (logits [B, V], state) is that step and `state` its
        state before it; the state returned holds the one-row step's state,
        which the caller places into its K rows' (`first_positions`), and
        parents that are the search's own rows.
        """
        beams = self.beams

        def step(model_state: Any, index: tf.Tensor, ids: tf.Tensor, _: Any) -> tuple:
            logits, model_state = one_row(model_state, index, ids[::beams], None)
            return tf.repeat(logits, beams, axis=0), model_state

        return dataclasses.replace(self, step=step).advance(self.start(state))

    def results(self, state: BeamState) -> tuple[tf.Tensor, tf.Tensor]:
        """(ids [B, N, L], scores [B, N]): the N best finished hypotheses, best first."""
        returned = self.num_returned
        return state.finished_ids[:, :returned], state.finished_scores[:, :returned]

    def keep_going(self, state: BeamState) -> tf.Tensor:
        return tf.reduce_any(~state.done & (state.index < self.decode_length))

    def advance(self, state: BeamState) -> BeamState:
        """One position: extend every alive beam, keep the best finished and alive ones."""
        previous = tf.reshape(previous_tokens(state.alive_ids, state.index), [-1])
        logits, model_state = self.step(state.model_state, state.index, previous, state.parents)
        candidates = self._candidates(state, logits)
        finished_ids, finished_scores = self._finish(state, candidates)
        # Alive: the best K extensions that did not end.
        ends = candidates.tokens == EOS_ID
        alive_log_probs, kept = tf.math.top_k(
            tf.where(ends, NEG_INF, candidates.log_probs), k=self.beams
        )
        parent_beams = tf.gather(candidates.origins, kept, batch_dims=1)  # [B, K]
        tree = state.tree
        if self.constraint is not None:
            kept_tokens = tf.gather(candidates.tokens, kept, batch_dims=1)
            tree = self.constraint.advance(reorder(tree, parent_beams), kept_tokens)
        done = state.done | _sentence_done(
            state.index,
            alive_log_probs,
            finished_scores,
            finished_scores[:, self.num_returned - 1],
            self.max_lengths,
            length_penalty(self.max_lengths + 1, self.alpha, self.penalty),
            self.stopping,
        )
        return BeamState(
            index=next_index(state.index, state.done),
            alive_ids=tf.gather(candidates.ids, kept, batch_dims=1),
            alive_log_probs=alive_log_probs,
            finished_ids=finished_ids,
            finished_scores=finished_scores,
            done=done,
            parents=tf.reshape(
                tf.range(self.batch)[:, tf.newaxis] * self.beams + parent_beams, [-1]
            ),
            model_state=model_state,
            tree=tree,
        )

    def _candidates(self, state: BeamState, logits: tf.Tensor) -> _Candidates:
        batch, beams = self.batch, self.beams
        vocab = logits.shape[-1] if logits.shape[-1] is not None else tf.shape(logits)[-1]
        logits = tf.reshape(logits, [batch, beams, vocab])
        log_probs = masked_log_probs(
            logits, state.index, self.max_lengths, self.min_lengths, self.constraint, state.tree
        )
        extended = tf.reshape(
            state.alive_log_probs[:, :, tf.newaxis] + log_probs, [batch, beams * vocab]
        )
        top_log_probs, top_indices = top_k(extended, 2 * beams)
        origins, tokens = top_indices // vocab, top_indices % vocab
        ids = write_position(tf.gather(state.alive_ids, origins, batch_dims=1), state.index, tokens)
        return _Candidates(top_log_probs, origins, tokens, ids)

    def _finish(self, state: BeamState, candidates: _Candidates) -> tuple[tf.Tensor, tf.Tensor]:
        """The K best finished hypotheses, with the EOS extensions that may finish added.

        Those are the EOS extensions among the first K candidates ("first_k")
        or all 2K ("best_possible"), of sentences not done.
        """
        slots = self.beams if self.stopping == "first_k" else 2 * self.beams
        may_finish = (
            (candidates.tokens == EOS_ID)
            & (tf.range(2 * self.beams) < slots)
            & ~state.done[:, tf.newaxis]
        )
        penalty = length_penalty(state.index + 1, self.alpha, self.penalty)[:, tf.newaxis]
        new_scores = tf.where(may_finish, candidates.log_probs / penalty, NEG_INF)
        scores, best = tf.math.top_k(
            tf.concat([state.finished_scores, new_scores], axis=1), k=self.beams
        )
        ids = tf.gather(tf.concat([state.finished_ids, candidates.ids], axis=1), best, batch_dims=1)
        return ids, scores


def _sentence_done(
    index: tf.Tensor,
    alive_log_probs: tf.Tensor,
    finished_scores: tf.Tensor,
    last_needed: tf.Tensor,
    max_lengths: tf.Tensor,
    longest_penalty: tf.Tensor,
    stopping: str,
) -> tf.Tensor:
    """[B] bool: sentence b is done under the stopping rule.

    Args:
      last_needed: [B] score of the N-th best finished hypothesis (-inf if none).
      longest_penalty: [B] the length penalty at each sentence's longest length.
    """
    # Log-probabilities only fall, and the penalty divides least at the longest length.
    best_possible = alive_log_probs[:, 0] / longest_penalty
    done = (best_possible <= last_needed) | (index >= max_lengths)
    if stopping == "first_k":
        done |= finished_scores[:, -1] > NEG_INF
    return done
