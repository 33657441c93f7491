"""A foreign SentencePiece model rewritten so that its ids are ours.

Marian (OPUS-MT) tokenizes with one SentencePiece model a side, then maps
each piece to an id through `vocab.json`, shared by both sides when the
embeddings are; a piece `vocab.json` lacks becomes `<unk>`. We read one
`.model` a side whose ids are the model's rows (`SentencePieceVocabulary`,
the in-graph tokenizer, both exports), so the importer writes each side's
model anew: row i holds the piece of our id i, PAD 0, EOS 1, UNK 2 first.

- A piece of the side's model keeps its score and type, so the segmentation
  is the same: a unigram model's choice depends on the scores alone, and
  the order of the pieces only breaks exact ties.
- A row of the vocabulary that the side's model lacks (the other side's
  pieces, language tags) is written as an unused piece: SentencePiece never
  emits it when encoding, as Marian's tokenizer never does, and decodes it to
  nothing.
- A piece of the side's model that the vocabulary lacks (Marian's tokenizer
  makes it `<unk>`) comes after every row, past the model's
  `trainer_spec.vocab_size`, which `SentencePieceVocabulary` reads as UNK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sentencepiece import sentencepiece_model_pb2 as model_pb2

from t2t_keras.data.foreign_pieces import IMPORTED_PREFIX
from t2t_keras.data.ids import EOS_ID, PAD_ID, UNK_ID
from t2t_keras.errors import UserError

_Piece: Any = model_pb2.ModelProto.SentencePiece  # type: ignore[attr-defined]


class UnsupportedModel(UserError):
    """A foreign model this importer cannot represent exactly."""


def rewrite(model_proto: bytes, pieces: Sequence[str], rows: int, name: str) -> bytes:
    """The SentencePiece model `model_proto` with `pieces[i]` at id i.

    Args:
      model_proto: the serialized foreign model.
      pieces: every id's piece, in our order: "<pad>", "</s>", "<unk>" first, then
        the pieces past the vocabulary's `rows`, read as UNK.
      rows: the vocabulary's size, the model's embedding rows.
      name: how to name the model in errors, e.g. "source.spm".

    Raises:
      UnsupportedModel: a piece the model emits that `pieces` lacks, or a
        model that is not SentencePiece's.
    """
    model = _parse(model_proto, name)
    own = {piece.piece: piece for piece in model.pieces}
    lacking = set(emitted_pieces(model_proto, name)) - set(pieces)
    if lacking:
        raise ValueError(f"{name}'s pieces {sorted(lacking)[:3]} have no id.")
    floor = min((piece.score for piece in model.pieces), default=0.0) - 10.0
    rewritten = [_our_piece(index, text, own.get(text), floor) for index, text in enumerate(pieces)]
    del model.pieces[:]
    model.pieces.extend(rewritten)
    spec = model.trainer_spec
    spec.pad_id, spec.eos_id, spec.unk_id, spec.bos_id = PAD_ID, EOS_ID, UNK_ID, -1
    spec.pad_piece, spec.eos_piece, spec.unk_piece = pieces[PAD_ID], pieces[EOS_ID], pieces[UNK_ID]
    spec.vocab_size = rows
    spec.model_prefix = IMPORTED_PREFIX  # How SentencePieceVocabulary knows to read it so.
    return model.SerializeToString()


def emitted_pieces(model_proto: bytes, name: str) -> list[str]:
    """The pieces the model may emit when encoding, in its order."""
    return [
        piece.piece
        for piece in _parse(model_proto, name).pieces
        if piece.type in (_Piece.NORMAL, _Piece.USER_DEFINED)
    ]


def _parse(model_proto: bytes, name: str) -> Any:
    model = model_pb2.ModelProto()  # type: ignore[attr-defined]
    try:
        model.ParseFromString(model_proto)
    except Exception as error:  # protobuf's DecodeError, or another parse failure.
        raise UnsupportedModel(f"{name} is not a SentencePiece model ({error}).") from None
    return model


def _our_piece(index: int, text: str, own: Any, floor: float) -> Any:
    """Row `index`: a reserved id's control piece, the model's own piece, or an unused one."""
    kinds = {PAD_ID: _Piece.CONTROL, EOS_ID: _Piece.CONTROL, UNK_ID: _Piece.UNKNOWN}
    if index in kinds:
        return _Piece(piece=text, score=0.0, type=kinds[index])
    if own is None or own.type not in (_Piece.NORMAL, _Piece.USER_DEFINED):
        return _Piece(piece=text, score=floor, type=_Piece.UNUSED)
    return _Piece(piece=text, score=own.score, type=own.type)
