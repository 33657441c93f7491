"""Translating lists of sentences: encode, batch by length, beam search, decode.

`SentenceTranslator` does what every runtime shares; `Translator` searches
with our Transformer (`export.ctranslate2_runtime.CTranslate2Translator` with a
CTranslate2 export). Sentences are sorted by length, longest first; our
search takes them through its slots, each sentence taking a slot as one
frees (`search.slots`: one compiled shape a file), a CTranslate2 export in
batches of similar lengths, and the outputs come back in input order:
exactly one per input. An input with
nothing for the model to read gets an empty output without being decoded:
an empty or whitespace-only one, or one the vocabulary reads as no tokens
at all (only characters its normalization drops, such as control
characters or a byte order mark, U+FEFF; these are counted in a logged
warning). Inputs longer than the model's max_length are cut to it, keeping
EOS: in Python by `cut_to_length`, in the graph (the exported SavedModel,
t2t-score) by `encode_texts`, which cut alike; `Translator.translate` logs
how many were. Sentences are encoded in Python (SentencePiece's own
library), which gives the ids of the graph's tokenizer.
A lone surrogate (U+D800-U+DFFF, a code point a Python string may hold,
e.g. from bytes decoded with errors="surrogateescape", but no UTF-8 text
can) is read as U+FFFD, the replacement character, by `readable_texts`;
the inputs that held one are counted in a logged warning.
"""

from __future__ import annotations

import abc
import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.models.transformer import Transformer
from t2t_keras.search.settings import DecodeSettings
from t2t_keras.search.slots import SlotSearch

PROGRESS_EVERY_SECONDS = 10.0
_SURROGATES = re.compile("[\ud800-\udfff]")


@dataclasses.dataclass
class Translation:
    """One input's result: hypotheses best first (one unless return_beams or several
    samples) and their scores."""

    texts: list[str]
    scores: list[float]
    ids: list[list[int]]  # Each hypothesis's ids up to and including EOS.

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    def line(self, write_scores: bool, columns: int = 1) -> str:
        """The output line: hypotheses tab-separated, then their scores if asked.

        Args:
          write_scores: append the scores.
          columns: hypotheses per line (`SearchSettings.num_returned`); missing
            ones (an empty input, fewer finished hypotheses) are empty, their
            scores -inf, so every line has the same fields.
        """
        missing = max(columns - len(self.texts), 0)
        fields = [" ".join(text.split()) for text in self.texts] + [""] * missing
        if write_scores:
            fields += [f"{score:.6f}" for score in self.scores] + ["-inf"] * missing
        return "\t".join(fields)


class PendingBatch(abc.ABC):
    """A batch of sentences a runtime is translating (`SentenceTranslator.submit_batch`)."""

    @abc.abstractmethod
    def done(self) -> bool:
        """Whether wait() would return at once."""

    @abc.abstractmethod
    def wait(self) -> None:
        """Returns once the runtime has searched the batch (the GIL released meanwhile)."""

    @abc.abstractmethod
    def result(self) -> list[Translation]:
        """The batch's translations, in its order (waits first)."""


class SentenceTranslator(abc.ABC):
    """Translates lists of sentences with some runtime; the runtime decodes batches of id rows.

    Attributes (set by subclasses):
      settings: the resolved decoding settings (`DecodeHParams.resolve`).
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}.
      max_length: the model's longest input in tokens, EOS included.
      workers: the batches it searches at once (`submit_batch`).
    """

    settings: DecodeSettings
    vocabs: dict[str, Vocabulary]
    max_length: int
    workers: int = 1

    def encode(self, sentences: Sequence[str]) -> tuple[list[list[int]], int]:
        """Each sentence's ids ending with EOS, and how many were cut.

        The row is empty for a blank sentence and for one the vocabulary
        reads as no tokens (EOS alone): neither is decoded. Lone surrogates
        are read as U+FFFD, uncounted (`translate` counts them).
        """
        rows: list[list[int]] = [[] for _ in sentences]
        truncated = 0
        for i, sentence in enumerate(sentences):
            if sentence.strip():
                # SentencePiece takes no text holding a lone surrogate (nor does TensorFlow).
                row, cut = cut_to_length(
                    self.vocabs["inputs"].encode(_SURROGATES.sub("\ufffd", sentence)),
                    self.max_length,
                )
                rows[i] = row if len(row) > 1 else []
                truncated += cut
        return rows, truncated

    def translate(
        self,
        sentences: Sequence[str],
        report: Callable[[int, int, float], None] | None = None,
        first: int = 0,
    ) -> list[Translation]:
        """Translations of `sentences`, in their order.

        Args:
          sentences: the inputs, one per sentence.
          report: called as report(done, total, seconds) every few seconds and after
            the last batch.
          first: the number of the first sentence, the others following it (a
            line's number in its file or session, by which sampling draws).

        Returns:
          One Translation per sentence.
        """
        sentences = readable_texts(sentences)
        rows, truncated = self.encode(sentences)
        if truncated:
            logging.warning(
                "%d input(s) longer than max_length=%d tokens were truncated to it.",
                truncated,
                self.max_length,
            )
        unread = sum(
            1 for row, text in zip(rows, sentences, strict=True) if text.strip() and not row
        )
        if unread:
            logging.warning(
                "%d input(s) hold no text the vocabulary reads (only control or format "
                "characters); their output lines are empty.",
                unread,
            )
        results: list[Translation | None] = [None] * len(rows)
        order = sorted((i for i, row in enumerate(rows) if row), key=lambda i: -len(rows[i]))
        for i, row in enumerate(rows):
            if not row:
                results[i] = Translation([], [], [])
        start = last_report = time.monotonic()
        done = len(rows) - len(order)
        for group in self._translations(rows, order, first):
            for index, translation in group:
                done += results[index] is None  # A batch may hold sentences done before.
                results[index] = translation
            now = time.monotonic()
            if report and (done == len(rows) or now - last_report >= PROGRESS_EVERY_SECONDS):
                report(done, len(rows), now - start)
                last_report = now
        return results  # type: ignore[return-value]

    def _translations(
        self, rows: list[list[int]], order: list[int], first: int = 0
    ) -> Iterator[list[tuple[int, Translation]]]:
        """(index, translation) of rows[i] for each i in `order` (longest first), in
        groups as they are done: batches of batch_size sentences, in that order (rows[i]
        is sentence number first + i). The next batches are submitted before the last one's
        results are read, so a runtime that searches in workers of its own keeps them busy."""
        size = self.settings.batch_size
        pending: list[tuple[list[int], PendingBatch]] = []
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            pending.append((chunk, self.submit_batch([rows[i] for i in chunk])))
            if len(pending) > self.workers:
                chunk, batch = pending.pop(0)
                yield list(zip(chunk, batch.result(), strict=True))
        for chunk, batch in pending:
            yield list(zip(chunk, batch.result(), strict=True))

    def submit_batch(self, rows: list[list[int]]) -> PendingBatch:
        """Starts translating rows (input ids ending with EOS), in the runtime's workers."""
        raise NotImplementedError


class Translator(SentenceTranslator):
    """Decodes text with a Transformer, its vocabularies and resolved decoding settings.

    Args:
      model: a built Transformer with its weights.
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}.
      settings: the search and batching settings (`DecodeHParams.resolve`).
      jit_compile: XLA-compile the search.
      tree_tokens: the tree symbols of `vocabs` (`Problem.tree_constraint`: a
        parsing problem's); with settings.search.tree_constraint, outputs are
        then well-formed trees over exactly the input's words. None: no constraint.
    """

    def __init__(
        self,
        model: Transformer,
        vocabs: dict[str, Vocabulary],
        settings: DecodeSettings,
        jit_compile: bool = True,
        tree_tokens: TreeTokens | None = None,
    ) -> None:
        self.settings = settings
        self.vocabs = vocabs
        self.max_length = model.hparams.max_length
        self.search = SlotSearch(
            model, settings.search, tree_tokens, jit_compile, slots=settings.batch_size
        )

    def _translations(
        self, rows: list[list[int]], order: list[int], first: int = 0
    ) -> Iterator[list[tuple[int, Translation]]]:
        """As every runtime's, but the sentences share the search's batch_size slots,
        each taking a slot as one frees (`search.slots`): groups come as the
        compiled search returns, a block of 2 x batch_size sentences placed each time.
        Sentence i is numbered first + i, its input line, which sampling draws its
        samples by: the same whatever the other lines."""
        numbers = [first + i for i in order]
        for group in self.search.finish([rows[i] for i in order], numbers):
            yield [(order[index], self._translation(ids, scores)) for index, ids, scores in group]

    def _translation(self, hypotheses: np.ndarray, scores: np.ndarray) -> Translation:
        """One sentence's Translation of its hypotheses [R, L] and scores [R] (-inf: none)."""
        kept = [(h, s) for h, s in zip(hypotheses, scores, strict=True) if s > -1e30]
        return Translation(
            texts=[self.vocabs["targets"].decode(h) for h, _ in kept],
            scores=[float(s) for _, s in kept],
            ids=[_through_eos(h) for h, _ in kept],
        )


def readable_texts(texts: Sequence[str]) -> list[str]:
    """The texts with each lone surrogate replaced by U+FFFD; logs how many held one.

    A surrogate (U+D800-U+DFFF) is half of a UTF-16 pair, not a character: no
    vocabulary, file or string tensor can hold one alone.
    """
    replaced = [_SURROGATES.subn("\ufffd", text) for text in texts]
    held = sum(1 for _, count in replaced if count)
    if held:
        logging.warning(
            "%d input(s) held lone surrogates (code points U+D800-U+DFFF, which are not "
            "text, as from bytes decoded with errors='surrogateescape'); each was read as "
            "U+FFFD.",
            held,
        )
    return [text for text, _ in replaced]


def cut_to_length(ids: list[int], max_length: int) -> tuple[list[int], bool]:
    """A sentence's ids as the search's input row: cut to the model's max_length.

    Args:
      ids: the sentence's ids, without EOS (`Vocabulary.encode`).
      max_length: the model's longest input; a longer row keeps its first
        max_length - 1 tokens, then EOS.

    Returns:
      (the row, ending with EOS; whether it was cut). `encode_texts` does the
      same in the graph.
    """
    return [*ids[: max_length - 1], EOS_ID], len(ids) > max_length - 1


def encode_texts(
    vocab: Vocabulary, texts: tf.Tensor, max_length: int
) -> tuple[tf.RaggedTensor, tf.Tensor]:
    """Encodes strings into the search's input rows, cut to the model's max_length
    (in the graph, as `cut_to_length` in Python).

    Args:
      vocab: the inputs vocabulary.
      texts: [B] tf.string.
      max_length: the model's longest input; a longer row keeps its first
        max_length - 1 tokens, then EOS.

    Returns:
      ([B, (T)] int32 ids, each row ending with EOS, T <= max_length;
      [B] bool, the rows that were cut).
    """
    tokens = vocab.tf_encode(texts)  # [B, (T)]
    cut = tokens.row_lengths() > max_length - 1
    eos = tf.RaggedTensor.from_tensor(tf.fill([tokens.nrows(), 1], tf.constant(EOS_ID, tf.int32)))
    return tf.concat([tf.cast(tokens[:, : max_length - 1], tf.int32), eos], axis=1), cut


def _through_eos(ids: np.ndarray) -> list[int]:
    kept = []
    for token in ids.tolist():
        if token == PAD_ID:
            break
        kept.append(token)
        if token == EOS_ID:
            break
    return kept
