"""Reserved token ids, the same for every vocabulary, and id rows padded into a batch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PAD_ID = 0  # Padding; also the decoder's start symbol (targets shifted right).
EOS_ID = 1  # End of sequence: every target ends with it.
UNK_ID = 2  # Out-of-vocabulary pieces.


def padded_ids(rows: Sequence[Sequence[int]]) -> np.ndarray:
    """int32 [len(rows), longest row]: each row of ids, then PAD to the batch's width."""
    batch = np.full([len(rows), max(map(len, rows))], PAD_ID, np.int32)
    for row, ids in zip(batch, rows, strict=True):
        row[: len(ids)] = ids
    return batch
