"""What greedy and beam search share: the step function, the tokens allowed, the length penalty.

Both searches run as one `tf.while_loop` over tensors of fixed shape, so a
caller can wrap them in an XLA-compiled `tf.function` or a SavedModel
signature. Shapes: B sentences, K beams, L output positions (tokens
including EOS), V vocabulary.

The step function: `step(state, index, ids [B * K], parents) -> (logits
[B * K, V], state)` gives the next-token logits after `ids`, the tokens at
position index - 1 (PAD, the start symbol, at index 0); index [B] is each
sentence's own position (sentences may be at different positions:
`search.slots` starts each when a row frees). `parents` [B * K]
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
  - Either search may be constrained to linearized parse trees (`constraint`,
    a `tree_constraint.TreeConstraint`): only the tokens it allows are taken,
    and it alone decides where EOS goes (the minimum length is not applied then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.modes import LENGTH_PENALTIES
from t2t_keras.search.tree_constraint import TreeConstraint, TreeState

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
      index: [B] the position each sentence decodes.
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


def masked_log_probs(
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


# `top_k` takes rows wider than this many chunks of this width in two stages.
_CHUNK = 128
_FEWEST_CHUNKS = 16


def top_k(values: tf.Tensor, k: int) -> tuple[tf.Tensor, tf.Tensor]:
    """`tf.math.top_k(values, k)` of values [B, N]: the same values and indices, ties
    to the lower index, 2.5x faster for beam search's rows of K x vocabulary.

    The row is cut into chunks of 128: the k best values lie in the k chunks of
    highest maximum (lower chunks first among equal maxima), so one pass of
    maxima and a top-k of k x 128 values replace a top-k of the whole row.
    """
    width = values.shape[-1]
    if width is None or width < _FEWEST_CHUNKS * _CHUNK or k > width:
        return tf.math.top_k(values, k=k)
    padding = -width % _CHUNK  # -inf after the row's end: taken last, never with k <= N.
    padded = tf.pad(values, [[0, 0], [0, padding]], constant_values=NEG_INF)
    chunks = tf.reshape(padded, [-1, (width + padding) // _CHUNK, _CHUNK])
    _, best = tf.math.top_k(tf.reduce_max(chunks, axis=-1), k=k)
    best = tf.sort(best, axis=-1)  # In row order, so that ties go to the lower index.
    picked = tf.reshape(tf.gather(chunks, best, batch_dims=1), [-1, k * _CHUNK])
    top, within = tf.math.top_k(picked, k=k)
    return top, tf.gather(best, within // _CHUNK, batch_dims=1) * _CHUNK + within % _CHUNK


def batch_size(max_lengths: tf.Tensor) -> int | tf.Tensor:
    """B, static when known so that loop variables keep their shapes."""
    return max_lengths.shape[0] if max_lengths.shape[0] is not None else tf.shape(max_lengths)[0]


def previous_tokens(ids: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """The tokens of ids [B, ..., L] at each sentence's position index [B] - 1; PAD at 0."""
    previous = tf.gather(ids, tf.maximum(index - 1, 0), axis=-1, batch_dims=1)
    started = tf.reshape(index > 0, [-1] + [1] * (previous.shape.rank - 1))
    return tf.where(started, previous, tf.zeros_like(previous))


def write_position(ids: tf.Tensor, index: tf.Tensor, tokens: tf.Tensor) -> tf.Tensor:
    """ids [B, ..., L] with each sentence's position index [B] set to tokens [B, ...]."""
    length = ids.shape[-1] if ids.shape[-1] is not None else tf.shape(ids)[-1]
    at = tf.one_hot(index, length, on_value=True, off_value=False)  # [B, L]
    at = tf.reshape(at, [-1] + [1] * (ids.shape.rank - 2) + [length])
    return tf.where(at, tokens[..., tf.newaxis], ids)


def next_index(index: tf.Tensor, done: tf.Tensor) -> tf.Tensor:
    """Each sentence's next position: index [B] + 1, kept where done [B] (a sentence
    done stays within L however long others go on)."""
    return index + tf.cast(~done, index.dtype)
