"""The few batch shapes a compiled search runs at.

XLA compiles the search once for every input shape it meets, and on a CPU a
compilation costs seconds, more than decoding a batch. Batches are
therefore padded to a small set of shapes before they are searched:

- rows: a power of two up to 32, then a multiple of 32, the extra rows
  copies of the batch's last row (a real sentence, so the search runs no
  step longer than it would for that row; the copies' results are dropped;
  `Translator` makes a file's last batch a full one, of its last sentences);
- width: a multiple of 8 up to 64, of 16 up to 128, then of 32 (never past
  max_length), the extra columns PAD, which attention never reads; a batch
  of one row (a sentence typed in) is at least 32 wide, so that sentences of
  ordinary length share one compiled search.

Padding changes no output: rows are searched independently, PAD columns
are masked, and each sentence's length limit counts its own tokens
(`decoder.decode_limits`), not the padded width. The same TensorFlow ops
pad the rows of `Translator` (eagerly) and of the SavedModel (in its graph).
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from t2t_keras.data.ids import PAD_ID

# The narrowest batch of one row: typed sentences up to this long share a shape.
ONE_ROW_WIDTH = 32
_ROW_STEP = 32  # Past this many rows, row counts are multiples of it.


def bucket_widths(max_length: int) -> list[int]:
    """The padded widths, ascending, the last one max_length (or longer rows' own)."""
    widths = [*range(8, 65, 8), *range(80, 129, 16)]
    while widths[-1] < max_length:
        widths.append(widths[-1] + 32)
    return [width for width in widths if width < max_length] + [max_length]


def bucket_width(length: int, max_length: int, rows: int = 2) -> int:
    """The padded width of a batch of `rows` rows whose longest has `length` ids."""
    return int(_bucket_width(tf.constant(length), tf.constant(rows), max_length))


def bucket_rows(rows: int) -> int:
    """The padded row count of a batch of `rows` sentences."""
    return int(_bucket_rows(tf.constant(rows)))


def search_padded(
    search: Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]],
    inputs: tf.Tensor,
    max_length: int,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Runs `search` on inputs padded to a bucket shape; returns the real rows' results.

    Args:
      search: the compiled search, ids [B, S] -> (ids [B, N, L], scores [B, N]).
      inputs: [B, S] int32 ids, B > 0, S <= max_length (eager or in a graph).
      max_length: the model's longest sequence: no row is padded past it.
    """
    rows, width = tf.shape(inputs)[0], tf.shape(inputs)[1]
    padded_rows = _bucket_rows(rows)
    padded_width = _bucket_width(width, padded_rows, max_length)
    copied = tf.minimum(tf.range(padded_rows), rows - 1)  # Row i, then the last row.
    padded = tf.pad(
        tf.gather(inputs, copied), [[0, 0], [0, padded_width - width]], constant_values=PAD_ID
    )
    ids, scores = search(padded)
    return ids[:rows], scores[:rows]


def _bucket_width(width: tf.Tensor, rows: tf.Tensor, max_length: int) -> tf.Tensor:
    widths = tf.constant(bucket_widths(max_length))
    wanted = tf.where(rows == 1, tf.maximum(width, min(ONE_ROW_WIDTH, max_length)), width)
    position = tf.searchsorted(widths, wanted[tf.newaxis], side="left")[0]
    # A row longer than max_length (cut by the caller in practice) keeps its width.
    return tf.maximum(tf.gather(widths, tf.minimum(position, len(widths) - 1)), width)


def _bucket_rows(rows: tf.Tensor) -> tf.Tensor:
    powers = tf.constant([1, 2, 4, 8, 16, _ROW_STEP])
    power = tf.gather(powers, tf.minimum(tf.searchsorted(powers, rows[tf.newaxis])[0], 5))
    return tf.where(rows <= _ROW_STEP, power, -(-rows // _ROW_STEP) * _ROW_STEP)
