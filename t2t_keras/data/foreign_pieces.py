"""How an imported model's SentencePiece vocabulary reads text, as its own tokenizer does.

Hugging Face's MarianTokenizer has SentencePiece cut a text into piece
strings and looks each up in the model's vocabulary (`vocab.json`), `<unk>`
for one it lacks: a piece SentencePiece knows but the vocabulary lacks, and
the text of a character SentencePiece does not know, which may be a piece of
the vocabulary (the other side's, in a joint one). A text that begins with
">>" and holds "<<" begins with a target-language tag, up to the first
"<<": one id, and SentencePiece cuts only the rest.

`t2t-importer` writes each side's SentencePiece model with every id's piece
(`t2t_keras.importing.sentencepiece_ids`): the vocabulary's at ids below
its `trainer_spec.vocab_size`, the pieces SentencePiece may emit but the
vocabulary lacks after them, and unused pieces for those SentencePiece never
emits; its `trainer_spec.model_prefix` (what SentencePiece's trainer named
its files, unused when encoding) is IMPORTED_PREFIX. Such a vocabulary reads
text this way; every vocabulary t2t-datagen trains reads SentencePiece's ids
as they are.
"""

from __future__ import annotations

from typing import Any

import sentencepiece as spm
import tensorflow as tf

from t2t_keras.data.ids import UNK_ID

# The tag and the rest, in RE2's syntax (the graph's): the shortest ">>...<<" first.
_TAGGED = r"(?s)>>.*?<<.*"
_TAG = r"(?s)^(>>.*?<<).*$"
_TAG_PREFIX = r"(?s)^>>.*?<<"
# The trainer_spec.model_prefix of a SentencePiece model t2t-importer wrote.
IMPORTED_PREFIX = "t2t-importer"


class ForeignPieces(tf.Module):
    """The piece-string lookup and the language tags of an imported model's vocabulary."""

    def __init__(self, processor: spm.SentencePieceProcessor, rows: int) -> None:
        super().__init__()
        self.processor = processor
        self.ids = {processor.id_to_piece(i): i for i in range(rows)}
        self.tags = {
            piece: index
            for piece, index in self.ids.items()
            if len(piece) > 4 and piece.startswith(">>") and piece.endswith("<<")
        }
        self._tables: Any = None  # (pieces, tags) graph lookups, made on first use.

    def encode(self, text: str) -> list[int]:
        """Ids of text, without EOS."""
        tag: list[int] = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            tag, text = [self.tags.get(text[: end + 2], UNK_ID)], text[end + 2 :]
        pieces = self.processor.encode(text, out_type=str)
        return tag + [self.ids.get(piece, UNK_ID) for piece in pieces]

    def tf_encode(self, texts: tf.Tensor, tokenize: Any) -> tf.RaggedTensor:
        """[B] strings -> [B, (T)] int32 ids; tokenize: [B] strings -> their piece strings."""
        if self._tables is None:
            with tf.init_scope():
                self._tables = (_table(self.ids), _table(self.tags))
        pieces, tags = self._tables
        tagged = tf.strings.regex_full_match(texts, _TAGGED)
        tag_ids = tf.boolean_mask(tags.lookup(tf.strings.regex_replace(texts, _TAG, r"\1")), tagged)
        texts = tf.where(tagged, tf.strings.regex_replace(texts, _TAG_PREFIX, ""), texts)
        ids = tf.ragged.map_flat_values(pieces.lookup, tokenize(texts))
        tag_rows = tf.RaggedTensor.from_row_lengths(tag_ids, tf.cast(tagged, tf.int64))
        return tf.concat([tag_rows, ids], axis=1)


def _table(ids: dict[str, int]) -> tf.lookup.StaticHashTable:
    keys = list(ids) or [""]
    values = list(ids.values()) or [UNK_ID]
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, tf.string), tf.constant(values, tf.int32)
    )
    return tf.lookup.StaticHashTable(initializer, default_value=UNK_ID)
