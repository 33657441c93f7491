"""Sampling: each token drawn from the model's distribution, the same wherever it is drawn.

Where greedy search takes the most probable allowed token, sampling
(`DecodeHParams` sampling=true) draws one from softmax(log_probs /
temperature) over the tokens the rules allow (`rules.masked_log_probs`: a
token they forbid is never drawn), kept to the top_k most probable, then to
the fewest most probable whose probability reaches top_p (nucleus
sampling), and renormalized. top_k and top_p act on the tempered
distribution, as fairseq's and Hugging Face's do.

The draw is an inverse CDF: one uniform number per row and position, a
hash of (seed, the row's stream, the position). No random state is carried,
so a sample depends only on the seed, its stream and the model: not on the
slot it runs in, its neighbours or the batch size, compiled by XLA or not.
The stream is the caller's number of the row: `SlotSearch` gives sample r of
sentence number i the stream i * samples_per_input + r (the `Translator`
numbers a sentence by its input line), `Decoder` the row's index likewise.

A sample scores as greedy search's output does: its log-probability under
the model (untempered, unfiltered) over the length penalty.

Shapes: B rows, V vocabulary, R samples of a sentence, L output positions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from t2t_keras.errors import UserError
from t2t_keras.layers import counter_hash
from t2t_keras.search.settings import MAX_SEED, SearchSettings

# A uniform number keeps this many of its hash's 32 bits: a float32's mantissa.
_UNIFORM_BITS = 24


@dataclasses.dataclass(frozen=True)
class Sampler:
    """How sampling draws a token (`DecodeHParams` documents each setting)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    @classmethod
    def of(cls, settings: SearchSettings) -> Sampler | None:
        """The sampler of settings that sample; None for greedy or beam search."""
        if not settings.sampling:
            return None
        return cls(settings.temperature, settings.top_k, settings.top_p, settings.seed)

    def draw(
        self,
        log_probs: tf.Tensor,
        streams: tf.Tensor,
        index: tf.Tensor,
        seeds: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Tokens [B] int32, one drawn from each row of log_probs [B, V] (-inf: forbidden).

        Args:
          log_probs: [B, V] float32, the allowed tokens' log-probabilities.
          streams: [B] int32, each row's stream (the caller's number of its sample).
          index: [B] int32, each row's position.
          seeds: [B] int32, each row's seed (a server's requests each have their
            own); None: this sampler's seed for every row.
        """
        scaled = log_probs / self.temperature
        tokens = None  # The vocabulary's order: no token is left out.
        if self.top_k or self.top_p < 1:
            width = scaled.shape[-1]  # The model's vocabulary: static.
            count = min(self.top_k, width) if self.top_k else width
            scaled, tokens = tf.math.top_k(scaled, k=count)  # Most probable first.
        probs = tf.nn.softmax(scaled, axis=-1)
        if self.top_p < 1:
            # The nucleus: a token whose more probable ones hold less than top_p.
            before = tf.math.cumsum(probs, axis=-1, exclusive=True)
            probs = tf.where(before < self.top_p, probs, 0.0)
        seed = self.seed if seeds is None else seeds
        chosen = inverse_cdf(probs, uniforms(seed, streams, index))
        return chosen if tokens is None else tf.gather(tokens, chosen, batch_dims=1)


def inverse_cdf(probs: tf.Tensor, uniform: tf.Tensor) -> tf.Tensor:
    """[B] int32: in each row of probs [B, N] (not normalized), the first index whose
    cumulative probability exceeds uniform [B] (in [0, 1)) times the row's total.

    An index of probability 0 is never returned.
    """
    cumulative = tf.math.cumsum(probs, axis=-1)
    target = uniform * cumulative[:, -1]
    above = cumulative > target[:, tf.newaxis]
    first = tf.argmax(tf.cast(above, tf.int32), axis=-1, output_type=tf.int32)
    # Rounding may put the target at the total: the last index of positive probability.
    width = tf.shape(probs, out_type=tf.int32)[-1]
    from_end = tf.argmax(tf.cast(tf.reverse(probs > 0, [-1]), tf.int32), axis=-1)
    last = width - 1 - tf.cast(from_end, tf.int32)
    return tf.where(tf.reduce_any(above, axis=-1), first, last)


def uniforms(seed: int | tf.Tensor, streams: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """[B] float32 in [0, 1): a hash of (seed, streams [B], index [B]), all int32; seed
    one for every row, or [B] one each (the same numbers for the same seed).

    Murmur3's finalizer on 32-bit integers, chained over the three: a
    different stream or position gives an unrelated number, on any device,
    under XLA or not.
    """
    if isinstance(seed, int):
        start = tf.fill(
            tf.shape(streams), tf.constant((seed + counter_hash.GOLDEN) % 2**32, tf.uint32)
        )
    else:  # seed + GOLDEN modulo 2**32, as above.
        start = tf.bitcast(tf.cast(seed, tf.int32), tf.uint32) + tf.constant(
            counter_hash.GOLDEN, tf.uint32
        )
    key = counter_hash.finalize(start)
    for value in (streams, index):
        key = counter_hash.mix(key, tf.bitcast(tf.cast(value, tf.int32), tf.uint32))
    kept = tf.bitwise.right_shift(key, tf.constant(32 - _UNIFORM_BITS, tf.uint32))
    return tf.cast(kept, tf.float32) * (2.0**-_UNIFORM_BITS)


def repeat_rows(
    rows: Sequence[Sequence[int]], numbers: Sequence[int], samples: int
) -> tuple[list[Sequence[int]], list[int]]:
    """Each row `samples` times, and their streams: number * samples + r for sample r.

    Raises:
      UserError: streams past 32 bits (numbers times samples of more than 2**31).
    """
    if numbers and (max(numbers) + 1) * samples - 1 > MAX_SEED:
        raise UserError(
            f"{len(numbers)} inputs of {samples} samples each are too many to number in 32 "
            "bits; decode the input in parts, or ask for fewer samples_per_input."
        )
    repeated = [row for row in rows for _ in range(samples)]
    return repeated, [number * samples + r for number in numbers for r in range(samples)]


def gather_samples(
    groups: Iterable[list[tuple[int, np.ndarray, np.ndarray]]], samples: int
) -> Iterator[list[tuple[int, np.ndarray, np.ndarray]]]:
    """Each sentence's samples, best first, once all are drawn.

    Args:
      groups: lists of (row, ids [1, L], scores [1]) as rows finish, row i *
        samples + r holding sample r of sentence i (`repeat_rows`); L may
        differ between rows, and the narrower are padded with PAD.
      samples: R, the samples of each sentence.

    Yields:
      a list after each group: (sentence, ids [R, L], scores [R]) of the
      sentences whose last sample it holds, the samples best first (ties:
      the first drawn first).
    """
    drawn: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
    for group in groups:
        complete = []
        for row, ids, scores in group:
            sentence, sample = divmod(row, samples)
            drawn.setdefault(sentence, {})[sample] = (ids[0], scores[0])
            if len(drawn[sentence]) == samples:
                found = drawn.pop(sentence)
                # A sample searched again in full-length slots (`slots`) may be wider: PAD.
                width = max(len(found[r][0]) for r in range(samples))
                all_ids = np.stack(
                    [np.pad(found[r][0], (0, width - len(found[r][0]))) for r in range(samples)]
                )
                all_scores = np.array([found[r][1] for r in range(samples)])
                order = np.argsort(-all_scores, kind="stable")
                complete.append((sentence, all_ids[order], all_scores[order]))
        yield complete


def best_first(ids: tf.Tensor, scores: tf.Tensor, samples: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Rows of samples as their sentences' hypotheses, best first (ties: the first drawn).

    Args:
      ids: [B * R, 1, L] int32, row i * R + r holding sample r of sentence i.
      scores: [B * R, 1] float32.
      samples: R.

    Returns:
      (ids [B, R, L], scores [B, R]).
    """
    ids = tf.reshape(ids, [-1, samples, tf.shape(ids)[-1]])
    scores = tf.reshape(scores, [-1, samples])
    order = tf.argsort(scores, axis=-1, direction="DESCENDING", stable=True)
    return tf.gather(ids, order, batch_dims=1), tf.gather(scores, order, batch_dims=1)
