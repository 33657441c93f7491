"""Vocabularies: text <-> ids in Python and in the TensorFlow graph.

Every vocabulary shares the ids of `t2t_keras.data.ids`: 0 = PAD, 1 = EOS,
2 = UNK. `encode` never appends EOS (callers do); `decode` stops at the first
EOS and skips PAD. The `tf_*` methods are graph ops, usable inside tf.data and
an exported SavedModel: a vocabulary is a `tf.Module`, so attaching it to the
exported module tracks the tokenizer it holds.

A SentencePiece vocabulary makes its graph tokenizer (tensorflow-text's) on
first use: a process that encodes in Python alone (t2t-decoder, the
trainer's dev BLEU) never imports tensorflow-text, for ops it would not run
(what t2t-decoder imports: 7.3 s against 7.6 s on a 2-core Zen 3 EPYC).
"""

from __future__ import annotations

import abc
import io
import os
from collections.abc import Iterable, Sequence
from typing import Any

import sentencepiece as spm
import tensorflow as tf

from t2t_keras.data.foreign_pieces import IMPORTED_PREFIX, ForeignPieces
from t2t_keras.data.ids import EOS_ID, PAD_ID, UNK_ID
from t2t_keras.data.sentence_sample import sample_evenly
from t2t_keras.errors import UserError
from t2t_keras.files import write_atomically

_MODEL_TYPES = ("bpe", "unigram")
_TOO_MANY_PIECES = "Vocabulary size too high"
_NO_SENTENCES = "!sentences_.empty()"
_NO_CHARACTERS = "all_chars_count"
_RESERVED_PIECES = {PAD_ID: "<pad>", EOS_ID: "</s>", UNK_ID: "<unk>"}


class VocabularyError(UserError, ValueError):
    """A vocabulary that cannot be trained or loaded as asked (the binaries print it cleanly)."""


class Vocabulary(tf.Module, abc.ABC):
    """Maps text to ids and back, in Python and in the TensorFlow graph."""

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, reserved ones included: every id is in [0, vocab_size)."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Encodes one string.

        Args:
          text: the string.

        Returns:
          Its ids, without EOS.
        """

    @abc.abstractmethod
    def _decode_ids(self, ids: list[int]) -> str:
        """Decodes ids that hold neither PAD nor EOS."""

    @abc.abstractmethod
    def tf_encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Encodes a batch of strings in the graph.

        Args:
          texts: [B] tf.string.

        Returns:
          [B, (T)] int32 ids, without EOS.
        """

    @abc.abstractmethod
    def _tf_decode_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        """[B, (T)] int32 ids holding neither PAD nor EOS -> [B] strings."""

    def decode(self, ids: Sequence[int]) -> str:
        """Decodes one sequence of ids, up to its first EOS, skipping PAD.

        Args:
          ids: the ids, e.g. a model's output.

        Returns:
          The text.
        """
        kept = []
        for token in ids:
            token = int(token)
            if token == EOS_ID:
                break
            if token != PAD_ID:
                kept.append(token)
        return self._decode_ids(kept)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The token each id stands for, one label per id, e.g. to label a plot's axes.

        Unlike `decode`, nothing is skipped or joined: PAD is "<pad>", EOS
        "</s>", UNK "<unk>", and an id outside the vocabulary "<id N>".

        Args:
          ids: the ids.

        Returns:
          One label per id, in order.
        """
        labels = []
        for token in ids:
            token = int(token)
            if token in _RESERVED_PIECES:
                labels.append(_RESERVED_PIECES[token])
            elif 0 <= token < self.vocab_size:
                labels.append(self._piece(token))
            else:
                labels.append(f"<id {token}>")
        return labels

    def _piece(self, token: int) -> str:
        """The label of one id in [3, vocab_size); by default its decoded text."""
        return self._decode_ids([token])

    def tf_decode(self, ids: tf.Tensor) -> tf.Tensor:
        """Decodes a batch of id rows in the graph, each up to its first EOS, skipping PAD.

        Args:
          ids: [B, T] integer ids (a RaggedTensor [B, (T)] works too).

        Returns:
          [B] tf.string.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(default_value=PAD_ID)
        ids = tf.cast(tf.convert_to_tensor(ids), tf.int32)
        eos_seen = tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1)
        keep = tf.logical_and(tf.equal(eos_seen, 0), tf.not_equal(ids, PAD_ID))
        return self._tf_decode_ragged(tf.ragged.boolean_mask(ids, keep))


class SentencePieceVocabulary(Vocabulary):
    """A SentencePiece subword model (BPE or unigram) stored in one `.model` file."""

    def __init__(self, model_path: str) -> None:
        """Loads the model at model_path.

        Args:
          model_path: a SentencePiece `.model` file with the ids PAD 0, EOS 1, UNK 2.
        """
        super().__init__()
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"No SentencePiece model at {model_path}.")
        with open(model_path, "rb") as model_file:
            model_proto = model_file.read()
        try:
            self._processor = spm.SentencePieceProcessor(model_proto=model_proto)
        except RuntimeError as error:
            raise VocabularyError(f"{model_path} is not a SentencePiece model: {error}") from None
        reserved = (self._processor.pad_id(), self._processor.eos_id(), self._processor.unk_id())
        if reserved != (PAD_ID, EOS_ID, UNK_ID):
            raise VocabularyError(
                f"The SentencePiece model {model_path} has PAD, EOS, UNK ids {reserved}; "
                f"t2t_keras needs {(PAD_ID, EOS_ID, UNK_ID)}. Train it with "
                "SentencePieceVocabulary.train."
            )
        self.model_path = model_path
        self._model_proto = model_proto
        self._tokenizer: Any = None  # `tokenizer`, made on first use.
        # An imported model's pieces that its own vocabulary lacks come last, past its
        # trainer_spec.vocab_size (`foreign_pieces`); a trained model has none past it.
        own_size, prefix = _trainer_spec(model_proto)
        self._rows = min(self._processor.get_piece_size(), own_size)
        self._foreign = None
        if prefix == IMPORTED_PREFIX:
            self._foreign = ForeignPieces(self._processor, self._rows)
        self._piece_tokenizer: Any = None  # Piece strings, for `_foreign`'s graph lookup.

    @property
    def tokenizer(self) -> Any:
        """tensorflow-text's SentencepieceTokenizer of this model, for the graph ops.

        Made the first time it is asked for, eagerly even inside a traced
        function, and tracked from then on: a SavedModel holding this
        vocabulary and a function that uses it holds the tokenizer too.
        """
        if self._tokenizer is None:
            import tensorflow_text as tf_text  # Imported here: see the module docstring.

            with tf.init_scope():
                self._tokenizer = tf_text.SentencepieceTokenizer(
                    model=self._model_proto, out_type=tf.int32
                )
        return self._tokenizer

    @classmethod
    def load(cls, model_path: str) -> SentencePieceVocabulary:
        """Loads a model written by `train`.

        Args:
          model_path: the `.model` file.

        Returns:
          The vocabulary. A missing file raises FileNotFoundError.
        """
        return cls(model_path)

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        model_path: str,
        vocab_size: int,
        model_type: str = "bpe",
        max_sentences: int = 1_000_000,
        character_coverage: float = 1.0,
        whole_words: Sequence[str] = (),
        seed: int = 1,
    ) -> SentencePieceVocabulary:
        """Trains a model on an even sample of the sentences and writes it atomically.

        `sentences` is read to its end and max_sentences of them, drawn evenly
        from the whole stream (`sample_evenly`, seeded), are trained on, so
        memory is bounded by the sample whatever the corpus size and every
        part of the corpus shapes the pieces; blank ones are skipped. If the
        sample is too small for vocab_size pieces, training is redone with
        vocab_size as an upper bound.
        The model goes to a temporary file beside model_path, then replaces it,
        so an interrupted run never leaves a partial model at model_path.

        Args:
          sentences: the training text, one sentence per item.
          model_path: where the `.model` file goes.
          vocab_size: pieces wanted, reserved ids included.
          model_type: "bpe" or "unigram".
          max_sentences: most sentences to train on.
          character_coverage: share of characters the pieces must cover; the
            rest become UNK.
          whole_words: words that are always one piece where they stand as a
            word, e.g. a parser's "(NP" (SentencePiece's user-defined symbols).
          seed: chooses the sample; the same sentences and seed give the same model.

        Returns:
          The trained vocabulary.
        """
        if model_type not in _MODEL_TYPES:
            raise VocabularyError(
                f"Unknown SentencePiece model_type {model_type!r}; accepted: {', '.join(_MODEL_TYPES)}."
            )
        sample = sample_evenly(sentences, max_sentences, seed).sentences
        if not sample:
            raise VocabularyError(
                f"No sentences to train the vocabulary on: {model_path} was not written."
            )
        options = _trainer_options(vocab_size, model_type, character_coverage, whole_words)
        model_proto = _train_up_to_vocab_size(sample, options, model_path)
        write_atomically(model_proto, model_path)
        return cls(model_path)

    @property
    def vocab_size(self) -> int:
        """Number of pieces, PAD, EOS and UNK included (none of those read as UNK)."""
        return self._rows

    def encode(self, text: str) -> list[int]:
        """Encodes one string into piece ids, without EOS."""
        if self._foreign is not None:
            return self._foreign.encode(text)
        return self._processor.encode(text, out_type=int)

    def _decode_ids(self, ids: list[int]) -> str:
        return self._processor.decode(ids)

    def _piece(self, token: int) -> str:
        # The piece as SentencePiece writes it: "▁" marks the start of a word.
        return self._processor.id_to_piece(token)

    def tf_encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Encodes [B] strings into [B, (T)] int32 piece ids in the graph, without EOS."""
        if self._foreign is None:
            return self.tokenizer.tokenize(texts)
        if self._piece_tokenizer is None:
            import tensorflow_text as tf_text

            with tf.init_scope():
                self._piece_tokenizer = tf_text.SentencepieceTokenizer(
                    model=self._model_proto, out_type=tf.string
                )
        return self._foreign.tf_encode(texts, self._piece_tokenizer.tokenize)

    def _tf_decode_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        return self.tokenizer.detokenize(ids)


def _trainer_spec(model_proto: bytes) -> tuple[int, str]:
    """The model's trainer_spec.vocab_size (its pieces' count if unset) and model_prefix."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    model = model_pb2.ModelProto()  # type: ignore[attr-defined]
    model.ParseFromString(model_proto)
    spec = model.trainer_spec
    return spec.vocab_size or len(model.pieces), spec.model_prefix


class ByteVocabulary(Vocabulary):
    """UTF-8 bytes as ids (byte value + 3), for algorithmic and character-level data."""

    _OFFSET = 3  # PAD, EOS, UNK come first.

    @property
    def vocab_size(self) -> int:
        """256 byte values plus PAD, EOS and UNK."""
        return 256 + self._OFFSET

    def encode(self, text: str) -> list[int]:
        """Encodes one string into its UTF-8 byte ids (one per byte), without EOS."""
        return [byte + self._OFFSET for byte in text.encode("utf-8")]

    def _decode_ids(self, ids: list[int]) -> str:
        # UNK and ids out of range carry no byte; invalid UTF-8 becomes U+FFFD.
        data = bytes(i - self._OFFSET for i in ids if self._OFFSET <= i < self.vocab_size)
        return data.decode("utf-8", errors="replace")

    def _piece(self, token: int) -> str:
        # Printable ASCII as itself, space as SentencePiece's "▁", other bytes
        # (parts of multi-byte characters, controls) as SentencePiece's "<0xNN>".
        byte = token - self._OFFSET
        if byte == 0x20:
            return "\u2581"
        return chr(byte) if 0x20 < byte < 0x7F else f"<0x{byte:02X}>"

    def tf_encode(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Encodes [B] strings into [B, (T)] int32 byte ids in the graph, without EOS."""
        single_bytes = tf.strings.bytes_split(tf.convert_to_tensor(texts, tf.string))
        values = tf.reshape(tf.io.decode_raw(single_bytes.flat_values, tf.uint8), [-1])
        return single_bytes.with_flat_values(tf.cast(values, tf.int32) + self._OFFSET)

    def _tf_decode_ragged(self, ids: tf.RaggedTensor) -> tf.Tensor:
        ids = tf.ragged.boolean_mask(ids, (ids >= self._OFFSET) & (ids < self.vocab_size))
        byte_strings = tf.constant([bytes([byte]) for byte in range(256)])
        pieces = ids.with_flat_values(tf.gather(byte_strings, ids.flat_values - self._OFFSET))
        joined = tf.strings.reduce_join(pieces, axis=1)
        # The same U+FFFD replacement as Python's errors="replace".
        return tf.strings.unicode_transcode(
            joined, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
        )


def _trainer_options(
    vocab_size: int, model_type: str, character_coverage: float, whole_words: Sequence[str]
) -> dict:
    """SentencePiece trainer options for `SentencePieceVocabulary.train`'s arguments,
    with t2t_keras's reserved ids and no BOS."""
    return dict(
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        pad_id=PAD_ID,
        eos_id=EOS_ID,
        unk_id=UNK_ID,
        bos_id=-1,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,  # SentencePiece logs every step to stderr otherwise.
        # "\u2581": a word start.
        user_defined_symbols=[f"\u2581{word}" for word in whole_words],
    )


def _train_up_to_vocab_size(sentences: list[str], options: dict, model_path: str) -> bytes:
    """The serialized model of options["vocab_size"] pieces, or of as many as a small
    corpus has; a failure raises a VocabularyError naming model_path."""
    try:
        return _train_model(sentences, options)
    except RuntimeError as error:
        if _TOO_MANY_PIECES not in str(error):
            raise _training_error(error, model_path) from None
    # Small corpus: take as many pieces as it has, up to vocab_size.
    try:
        return _train_model(sentences, {**options, "hard_vocab_limit": False})
    except RuntimeError as retry_error:
        raise _training_error(retry_error, model_path) from None


def _train_model(sentences: list[str], options: dict) -> bytes:
    """Runs the SentencePiece trainer on sentences; returns the serialized model."""
    model_writer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model_writer, **options
    )
    return model_writer.getvalue()


def _training_error(error: RuntimeError, model_path: str) -> VocabularyError:
    """A SentencePiece training failure as an error that says what to change."""
    if _NO_SENTENCES in str(error):
        return VocabularyError(
            f"No sentences to train the vocabulary on: {model_path} was not written "
            "(SentencePiece skips blank sentences and those over 4192 bytes)."
        )
    if _NO_CHARACTERS in str(error):
        return VocabularyError(
            f"No characters to train the vocabulary on: every sentence is empty once "
            "SentencePiece drops control and format characters (ESC, DEL, U+FEFF, ...); "
            f"{model_path} was not written."
        )
    message = str(error).split("] ", 1)[-1]  # Drop SentencePiece's source location.
    return VocabularyError(f"SentencePiece could not train the vocabulary {model_path}: {message}")
