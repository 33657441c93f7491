"""Which vocabulary ids are a linearized tree's symbols, for a search constrained to trees.

A parser's target vocabulary holds each bracket and XX as one piece
("▁(NP", "▁)NP", "▁XX": `ParsingProblem.whole_words`), and a word of the input
starts with a piece that begins with "▁" (SentencePiece marks a word start so,
also before characters it does not know: "€uro" is "▁", "<unk>", "u", ...).
`tree_tokens` reads both from the vocabularies, which may be one shared model
or one per side; `t2t_keras.search.tree_constraint` turns the tables into
the search's mask. Pure Python: no TensorFlow here.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.trees import POS_PLACEHOLDER

if TYPE_CHECKING:
    from t2t_keras.data.vocab import Vocabulary

WORD_START = "\u2581"  # SentencePiece's mark of a word start.
_LABEL = re.compile(r"[^\s()\u2581]+")


@dataclasses.dataclass(frozen=True)
class TreeTokens:
    """The ids of a linearized tree's symbols, and of the inputs' word starts.

    Attributes:
      open_ids: the targets ids of the opening brackets "(LABEL", one per label.
      close_ids: the matching ")LABEL" of each, aligned with open_ids.
      leaf_id: the targets id of XX.
      word_start_ids: the inputs ids whose piece starts a word (EOS and PAD excluded).
      inputs_vocab_size: ids of the inputs vocabulary: each word start is below it.
    """

    open_ids: tuple[int, ...]
    close_ids: tuple[int, ...]
    leaf_id: int
    word_start_ids: tuple[int, ...]
    inputs_vocab_size: int

    def words(self, ids: list[int]) -> int:
        """How many words a row of input ids holds (the leaves its tree needs)."""
        starts = set(self.word_start_ids)
        return sum(1 for token in ids if token in starts)


def tree_tokens(vocabs: dict[str, Vocabulary]) -> TreeTokens | None:
    """The tree symbols of vocabs["targets"] and the word starts of vocabs["inputs"].

    Args:
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}, the same one or two.

    Returns:
      The tables, or None when the targets vocabulary has no XX piece or no
      bracket pair as one piece each (a byte vocabulary, say): then outputs
      cannot be constrained to trees.
    """
    targets = _piece_ids(vocabs["targets"])
    leaf_id = targets.get(WORD_START + POS_PLACEHOLDER)
    pairs = sorted(
        (token, targets[f"{WORD_START}){piece[2:]}"])
        for piece, token in targets.items()
        if piece.startswith(f"{WORD_START}(")
        and _LABEL.fullmatch(piece[2:])
        and f"{WORD_START}){piece[2:]}" in targets
    )
    if leaf_id is None or not pairs:
        return None
    inputs = vocabs["inputs"]
    word_starts = tuple(
        token
        for token, piece in enumerate(inputs.pieces(range(inputs.vocab_size)))
        if piece.startswith(WORD_START) and token not in (PAD_ID, EOS_ID)
    )
    return TreeTokens(
        open_ids=tuple(open_id for open_id, _ in pairs),
        close_ids=tuple(close_id for _, close_id in pairs),
        leaf_id=leaf_id,
        word_start_ids=word_starts,
        inputs_vocab_size=inputs.vocab_size,
    )


def _piece_ids(vocab: Vocabulary) -> dict[str, int]:
    """{piece: id} of a vocabulary (the first id of a piece written twice)."""
    pieces: dict[str, int] = {}
    for token, piece in enumerate(vocab.pieces(range(vocab.vocab_size))):
        pieces.setdefault(piece, token)
    return pieces
