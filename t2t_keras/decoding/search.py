"""Greedy and beam search over a one-position-per-step decoder.

Both run as one `tf.while_loop` over tensors of fixed shape, so a caller can
wrap them in an XLA-compiled `tf.function` or a SavedModel signature. Shapes:
B sentences, K beams, L output positions (tokens including EOS), V vocabulary.

The step function: `step(state, index, ids [B * K], parents) -> (logits
[B * K, V], state)` gives the next-token logits after `ids`, the tokens at
position index - 1 (PAD, the start symbol, at index 0). `parents` [B * K]
int32 says which row of the previous step each row continues (beam search
reorders its beams), or is None when every row continues itself (greedy
search). `state` is the step function's own: the searches only carry it, so
the model decides what reordering costs.

Rules shared by both searches:
  - PAD is never produced; sentence b gets at most max_lengths[b] tokens before
    its EOS, which is forced at position max_lengths[b], and at least
    min_lengths[b]: EOS is barred before that position (fairseq's min_len; the
    decoder asks for 1 token unless the input is empty, so an ordinary
    sentence never translates to nothing).
  - A hypothesis of n tokens (EOS included) with log-probability log_p scores
    log_p / ((5 + n) / 6) ** alpha, the GNMT length penalty, or with the
    penalty form "length", log_p / n ** alpha (CTranslate2's and fairseq's).
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

Either search may be constrained to linearized parse trees (`constraint`, a
`tree_constraint.TreeConstraint`): only the tokens it allows are taken, and
it alone decides where EOS goes (the minimum length is not applied then).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.decoding.decode_hparams import LENGTH_PENALTIES, STOPPING_RULES
from t2t_keras.decoding.tree_constraint import TreeConstraint, TreeState, reorder

StepFunction = Callable[[Any, tf.Tensor, tf.Tensor, tf.Tensor | None], tuple[tf.Tensor, Any]]
NEG_INF = float("-inf")


def length_penalty(length: tf.Tensor, alpha: float, form: str = "gnmt") -> tf.Tensor:
    """((5 + length) / 6) ** alpha (form "gnmt") or length ** alpha ("length"), float32."""
    if form not in LENGTH_PENALTIES:
        raise ValueError(f"form must be one of {LENGTH_PENALTIES}, not {form!r}")
    length = tf.cast(length, tf.float32)
    return tf.pow((5.0 + length) / 6.0 if form == "gnmt" else length, alpha)


def allowed_log_probs(
    logits: tf.Tensor, index: tf.Tensor, max_lengths: tf.Tensor, min_lengths: tf.Tensor | None
) -> tf.Tensor:
    """log_softmax with PAD removed, EOS barred before min_lengths and forced at max_lengths.

    Args:
      logits: [B, K, V] float32.
      index: the position being decoded.
      max_lengths: [B] most tokens before EOS.
      min_lengths: [B] fewest tokens before EOS (each at most max_lengths), or None.

    Returns:
      [B, K, V] log-probabilities, -inf where a token may not be chosen.
    """
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    tokens = tf.range(tf.shape(logits)[-1])[tf.newaxis, tf.newaxis, :]
    forced = (index >= max_lengths)[:, tf.newaxis, tf.newaxis]
    allowed = tf.logical_and(tokens != PAD_ID, tf.logical_or(~forced, tokens == EOS_ID))
    if min_lengths is not None:
        barred = (index < min_lengths)[:, tf.newaxis, tf.newaxis]
        allowed = tf.logical_and(allowed, tf.logical_or(~barred, tokens != EOS_ID))
    return tf.where(allowed, log_probs, NEG_INF)


def greedy_search(
    step: StepFunction,
    state: Any,
    decode_length: int,
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
      decode_length: L, static.
      max_lengths: [B] int32, each below L.
      alpha: length penalty exponent of the returned scores.
      min_lengths: [B] int32, each at most max_lengths; None = no minimum.
      penalty: the length penalty's form, "gnmt" or "length" (`length_penalty`).
      constraint: what outputs must be (parse trees), or None.

    Returns:
      (ids [B, 1, L] int32 with EOS then PAD, scores [B, 1] float32).
    """
    batch = _batch_size(max_lengths)

    def body(*loop_vars: Any) -> tuple[Any, ...]:
        index, ids, log_probs, finished, state, tree = loop_vars
        previous = _previous_tokens(ids, index)
        logits, state = step(state, index, previous, None)
        token_log_probs = _masked_log_probs(
            logits[:, tf.newaxis], index, max_lengths, min_lengths, constraint, tree
        )[:, 0]
        tokens = tf.argmax(token_log_probs, axis=-1, output_type=tf.int32)
        tokens = tf.where(finished, PAD_ID, tokens)
        chosen = tf.gather(token_log_probs, tokens, batch_dims=1)
        log_probs += tf.where(finished, 0.0, chosen)
        ids += tf.one_hot(index, decode_length, dtype=ids.dtype) * tokens[:, tf.newaxis]
        if constraint is not None:
            tree = constraint.advance(tree, tokens[:, tf.newaxis])
        return index + 1, ids, log_probs, finished | (tokens == EOS_ID), state, tree

    def keep_going(*loop_vars: Any) -> tf.Tensor:
        index, finished = loop_vars[0], loop_vars[3]
        return tf.logical_and(index < decode_length, ~tf.reduce_all(finished))

    _, ids, log_probs, _, _, _ = tf.while_loop(
        keep_going,
        body,
        (
            tf.constant(0),
            tf.zeros([batch, decode_length], tf.int32),
            tf.zeros([batch]),
            tf.zeros([batch], tf.bool),
            state,
            constraint.start(1) if constraint is not None else (),
        ),
    )
    lengths = tf.reduce_sum(tf.cast(ids != PAD_ID, tf.int32), axis=1)
    scores = log_probs / length_penalty(lengths, alpha, penalty)
    return ids[:, tf.newaxis], scores[:, tf.newaxis]


class BeamState(NamedTuple):
    """What beam search carries from one position to the next."""

    # The position decoded next.
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
    decode_length: int,
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
      decode_length: L, static.
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
    search = _BeamSearch(
        step, beam_size, decode_length, max_lengths, min_lengths, alpha, penalty, stopping,
        num_returned or beam_size, constraint,
    )  # fmt: skip
    (final,) = tf.while_loop(
        search.keep_going, lambda beams: (search.advance(beams),), (search.start(state),)
    )
    returned = search.num_returned
    return final.finished_ids[:, :returned], final.finished_scores[:, :returned]


@dataclasses.dataclass(frozen=True)
class _BeamSearch:
    """One beam search's settings, and its loop: `start`, then `advance` while `keep_going`."""

    step: StepFunction
    beams: int
    decode_length: int
    max_lengths: tf.Tensor
    min_lengths: tf.Tensor | None
    alpha: float
    penalty: str
    stopping: str
    num_returned: int
    constraint: TreeConstraint | None

    @property
    def batch(self) -> int | tf.Tensor:
        return _batch_size(self.max_lengths)

    def start(self, model_state: Any) -> BeamState:
        batch, beams, length = self.batch, self.beams, self.decode_length
        first_beam_only = tf.concat([[0.0], tf.fill([beams - 1], NEG_INF)], axis=0)
        return BeamState(
            index=tf.constant(0),
            alive_ids=tf.zeros([batch, beams, length], tf.int32),
            alive_log_probs=tf.tile(first_beam_only[tf.newaxis], [batch, 1]),
            finished_ids=tf.zeros([batch, beams, length], tf.int32),
            finished_scores=tf.fill([batch, beams], NEG_INF),
            done=tf.zeros([batch], tf.bool),
            parents=tf.range(batch * beams),
            model_state=model_state,
            tree=self.constraint.start(beams) if self.constraint is not None else (),
        )

    def keep_going(self, state: BeamState) -> tf.Tensor:
        return tf.logical_and(state.index < self.decode_length, ~tf.reduce_all(state.done))

    def advance(self, state: BeamState) -> BeamState:
        """One position: extend every alive beam, keep the best finished and alive ones."""
        previous = tf.reshape(_previous_tokens(state.alive_ids, state.index), [-1])
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
            index=state.index + 1,
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
        vocab = tf.shape(logits)[-1]
        logits = tf.reshape(logits, [batch, beams, vocab])
        log_probs = _masked_log_probs(
            logits, state.index, self.max_lengths, self.min_lengths, self.constraint, state.tree
        )
        extended = tf.reshape(state.alive_log_probs[:, :, tf.newaxis] + log_probs, [batch, -1])
        top_log_probs, top_indices = tf.math.top_k(extended, k=2 * beams)
        origins, tokens = top_indices // vocab, top_indices % vocab
        ids = tf.gather(state.alive_ids, origins, batch_dims=1)
        ids += (
            tf.one_hot(state.index, self.decode_length, dtype=tf.int32) * tokens[:, :, tf.newaxis]
        )
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
        penalty = length_penalty(state.index + 1, self.alpha, self.penalty)
        new_scores = tf.where(may_finish, candidates.log_probs / penalty, NEG_INF)
        scores, best = tf.math.top_k(
            tf.concat([state.finished_scores, new_scores], axis=1), k=self.beams
        )
        ids = tf.gather(tf.concat([state.finished_ids, candidates.ids], axis=1), best, batch_dims=1)
        return ids, scores


def _masked_log_probs(
    logits: tf.Tensor,
    index: tf.Tensor,
    max_lengths: tf.Tensor,
    min_lengths: tf.Tensor | None,
    constraint: TreeConstraint | None,
    tree: TreeState | tuple[()],
) -> tf.Tensor:
    """`allowed_log_probs` [B, K, V], and under a constraint only what it allows.

    The constraint decides EOS: the minimum length would bar the EOS after a
    short tree, the only token it allows there. EOS forced at max_lengths
    agrees with it, since every tree it allows is complete by then.
    """
    if constraint is None:
        return allowed_log_probs(logits, index, max_lengths, min_lengths)
    assert isinstance(tree, TreeState)
    log_probs = allowed_log_probs(logits, index, max_lengths, None)
    return tf.where(constraint.allowed(tree, index), log_probs, NEG_INF)


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


def _batch_size(max_lengths: tf.Tensor) -> int | tf.Tensor:
    """B, static when known so that loop variables keep their shapes."""
    return max_lengths.shape[0] if max_lengths.shape[0] is not None else tf.shape(max_lengths)[0]


def _previous_tokens(ids: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """The tokens at position index - 1 of ids [..., L]; PAD at index 0."""
    previous = tf.gather(ids, tf.maximum(index - 1, 0), axis=-1)
    return tf.where(index > 0, previous, tf.zeros_like(previous))
