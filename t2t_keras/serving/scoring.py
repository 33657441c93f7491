"""Scoring given pairs: log P(target | source) under a trained model, teacher-forced.

What fairseq's `--score-reference` and OpenNMT-tf's `score` give, for
filtering a corpus or reranking hypotheses. Each target is read as training
reads it (its pieces, then EOS) and the model runs as in training, inputs and
targets at once, but in inference mode (no dropout): a pair's score is minus
its training loss without label smoothing, the sum of its target tokens'
log-probabilities, EOS included.

Pairs are sorted by length, longest first, and batched by tokens (padding
counted) at the bucket widths of `search.shapes`, so a file compiles a few
shapes; scores come back in input order. A pair with a side that is blank, or
that the vocabulary reads as no tokens, is not scored (None; an empty output
line). Sources longer than the model's max_length are cut to it, as
t2t-decoder cuts them (`translator.encode_texts`; the count is logged); a
target longer is an error, since scoring a cut target scores another sentence.
Lone surrogates are read as U+FFFD (`translator.readable_texts`).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import os
import time
from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.problem import Problem
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.files import check_writable, read_text_lines
from t2t_keras.models.transformer import Transformer
from t2t_keras.search.shapes import bucket_rows, bucket_widths
from t2t_keras.serving.translator import encode_texts, readable_texts

_IDS = tf.TensorSpec([None, None], tf.int32)


@dataclasses.dataclass(frozen=True)
class PairScore:
    """One pair's score: each target token's log-probability, in order, EOS last."""

    token_log_probs: list[float]

    @property
    def total(self) -> float:
        """log P(target | source): the sum over the target's tokens."""
        return math.fsum(self.token_log_probs)

    @property
    def tokens(self) -> int:
        """The target's tokens, EOS included."""
        return len(self.token_log_probs)

    @property
    def mean(self) -> float:
        """The mean log-probability per target token."""
        return self.total / self.tokens

    def line(self, normalize: bool = False) -> str:
        """The output line: total, tokens, the per-token ones (space-separated), tab-separated;
        with normalize, the mean last."""
        fields = [f"{self.total:.6f}", str(self.tokens)]
        fields.append(" ".join(f"{value:.6f}" for value in self.token_log_probs))
        if normalize:
            fields.append(f"{self.mean:.6f}")
        return "\t".join(fields)


def score_line(score: PairScore | None, normalize: bool = False) -> str:
    """A pair's output line; empty for a pair not scored."""
    return "" if score is None else score.line(normalize)


class Scorer:
    """Scores (source, target) pairs with a Transformer and its vocabularies.

    Args:
      model: a built Transformer with its weights.
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}.
      batch_size: tokens per batch, padding counted (a pair counts its
        padded width once: source and target share it).
      jit_compile: XLA-compile the forward pass (one compilation per shape).
    """

    def __init__(
        self,
        model: Transformer,
        vocabs: dict[str, Vocabulary],
        batch_size: int,
        jit_compile: bool = True,
    ) -> None:
        if batch_size < 1:
            raise UserError(f"batch_size={batch_size}: give at least 1 token per batch.")
        self.model = model
        self.vocabs = vocabs
        self.batch_size = batch_size
        self.max_length = model.hparams.max_length
        self.widths = bucket_widths(self.max_length)
        self._log_probs = tf.function(
            self._token_log_probs,
            input_signature=[_IDS, _IDS],
            jit_compile=jit_compile,
            autograph=False,
        )

    def score(
        self, sources: Sequence[str], targets: Sequence[str], target_name: str = "target"
    ) -> list[PairScore | None]:
        """Each pair's score, in input order; None for a pair with a blank side.

        Args:
          sources, targets: the pairs' texts, as the model reads them (see
            `model_texts`), aligned.
          target_name: how errors name the targets, e.g. "--target_file FILE".

        Raises:
          UserError: the lists differ in length, or a target is longer than
            the model's max_length (naming its line).
        """
        if len(sources) != len(targets):
            raise UserError(f"{len(sources)} sources but {len(targets)} targets: give pairs.")
        source_rows, cut = self.encode(sources, "inputs")
        target_rows, _ = self.encode(targets, "targets")
        self._check_target_lengths(target_rows, target_name)
        if cut:
            logging.warning(
                "%d source(s) longer than max_length=%d tokens were cut to it.",
                cut,
                self.max_length,
            )
        pairs = [
            i for i, rows in enumerate(zip(source_rows, target_rows, strict=True)) if all(rows)
        ]
        if len(pairs) < len(sources):
            logging.warning(
                "%d pair(s) with a blank side (or one the vocabulary reads as no tokens) "
                "are not scored: their output lines are empty.",
                len(sources) - len(pairs),
            )
        results: list[PairScore | None] = [None] * len(sources)
        start = time.monotonic()
        for batch in self.batches(source_rows, target_rows, pairs):
            scores = self._score_batch(source_rows, target_rows, batch)
            for index, score in zip(batch, scores, strict=True):
                results[index] = score
        seconds = time.monotonic() - start
        logging.info(
            "Scored %d pairs in %.1f s (%.1f pairs/s).",
            len(pairs),
            seconds,
            len(pairs) / seconds if seconds > 0 else 0.0,
        )
        return results

    def encode(self, texts: Sequence[str], side: str) -> tuple[list[list[int]], int]:
        """Each text's ids ending with EOS ([] for a blank one or one read as no tokens),
        and how many were cut: "inputs" to max_length, as t2t-decoder cuts them;
        "targets" never (`_check_target_lengths` refuses the long ones)."""
        texts = readable_texts(texts)
        rows: list[list[int]] = [[] for _ in texts]
        kept = [i for i, text in enumerate(texts) if text.strip()]
        if not kept:
            return rows, 0
        batch = tf.constant([texts[i] for i in kept], tf.string)
        cut = 0
        if side == "inputs":
            ids, was_cut = encode_texts(self.vocabs[side], batch, self.max_length)
            encoded, cut = ids.to_list(), int(tf.math.count_nonzero(was_cut))
        else:
            encoded = [[*row, EOS_ID] for row in self.vocabs[side].tf_encode(batch).to_list()]
        for i, row in zip(kept, encoded, strict=True):
            rows[i] = row if len(row) > 1 else []
        return rows, cut

    def batches(
        self, source_rows: list[list[int]], target_rows: list[list[int]], pairs: list[int]
    ) -> Iterator[list[int]]:
        """The pairs (indices) in batches of about batch_size tokens, longest first.

        A batch's pairs share one bucket width; it holds max(1, batch_size //
        width) of them, the last of a width fewer.
        """
        width_of = {i: self.width(max(len(source_rows[i]), len(target_rows[i]))) for i in pairs}
        order = sorted(pairs, key=lambda i: -width_of[i])  # Stable: input order within a width.
        for width, same_width in itertools.groupby(order, key=width_of.__getitem__):
            group, rows = list(same_width), max(1, self.batch_size // width)
            for first in range(0, len(group), rows):
                yield group[first : first + rows]

    def width(self, length: int) -> int:
        """The bucket width a pair of `length` ids (its longer side) is padded to."""
        return self.widths[min(bisect.bisect_left(self.widths, length), len(self.widths) - 1)]

    def _score_batch(
        self, source_rows: list[list[int]], target_rows: list[list[int]], batch: list[int]
    ) -> list[PairScore]:
        """The scores of the pairs of `batch`, in its order."""
        width = self.width(max(max(len(source_rows[i]), len(target_rows[i])) for i in batch))
        # Full batches have one row count per width; a width's last batch a few.
        rows = min(max(1, self.batch_size // width), bucket_rows(len(batch)))
        inputs = np.full([rows, width], PAD_ID, np.int32)
        targets = np.full_like(inputs, PAD_ID)
        for row, i in enumerate(batch):
            inputs[row, : len(source_rows[i])] = source_rows[i]
            targets[row, : len(target_rows[i])] = target_rows[i]
        log_probs = self._log_probs(tf.constant(inputs), tf.constant(targets)).numpy()
        return [
            PairScore(log_probs[row, : len(target_rows[i])].tolist()) for row, i in enumerate(batch)
        ]

    def _token_log_probs(self, inputs: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """[B, S], [B, T] ids -> [B, T] float32: log P(target token | source, earlier
        tokens), 0 at PAD; the logits are training's (`Transformer.call`)."""
        logits = self.model({"inputs": inputs, "targets": targets}, training=False)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)
        picked = tf.gather(log_probs, targets, batch_dims=2)
        return tf.where(targets == PAD_ID, tf.zeros_like(picked), picked)

    def _check_target_lengths(self, rows: list[list[int]], target_name: str) -> None:
        too_long = [
            number for number, row in enumerate(rows, start=1) if len(row) > self.max_length
        ]
        if too_long:
            tokens = len(rows[too_long[0] - 1])
            raise UserError(
                f"{target_name}, line {too_long[0]}: the target is {tokens} tokens long (EOS "
                f"included), longer than the model's max_length of {self.max_length}"
                f"{f'; so are {len(too_long) - 1} other line(s)' if len(too_long) > 1 else ''}. "
                "A cut target would score another sentence: remove or shorten such pairs."
            )


def read_pairs(source_file: str, target_file: str) -> tuple[list[str], list[str]]:
    """The lines of the two UTF-8 files, aligned.

    Raises:
      UserError: a file missing or not UTF-8 (naming the line), or line counts that differ.
    """
    sources = read_text_lines(source_file, "--source_file")
    targets = read_text_lines(target_file, "--target_file")
    if len(sources) != len(targets):
        raise UserError(
            f"--source_file {source_file} has {len(sources)} lines but --target_file "
            f"{target_file} has {len(targets)}: give one target per source line, in the "
            "same order."
        )
    return sources, targets


def model_texts(
    problem: Problem | None, sources: Sequence[str], targets: Sequence[str], target_name: str
) -> tuple[list[str], list[str]]:
    """The texts the model reads for given lines: `Problem.model_input` of each source,
    `Problem.model_target` of each target (a parser's linearized tree); as they are
    without a problem.

    Raises:
      UserError: a target line the problem cannot read, naming it.
    """
    if problem is None:
        return list(sources), list(targets)
    model_targets = []
    for number, line in enumerate(readable_texts(targets), start=1):
        try:
            model_targets.append(problem.model_target(line))
        except ValueError as error:
            raise UserError(
                f"{target_name}, line {number}: {error}; problem {problem.name} scores "
                "targets as it trains on them (a parser: one PTB tree a line)."
            ) from None
    return [problem.model_input(line) for line in readable_texts(sources)], model_targets


def check_output_file(path: str, inputs: dict[str, str]) -> None:
    """Refuses an output path that cannot be written or that is one of the inputs."""
    check_writable(path, "--output_file")
    output = os.path.expanduser(path)
    for flag, given in inputs.items():
        if os.path.exists(output) and os.path.samefile(output, os.path.expanduser(given)):
            raise UserError(
                f"--output_file {path} is the {flag} file; writing the scores there would "
                "replace it. Give another --output_file."
            )
