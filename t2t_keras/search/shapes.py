"""The few shapes a compiled search runs at.

XLA compiles the search once for every input shape it meets, and on a CPU a
compilation costs seconds, more than decoding a batch. The slots of
`search.slots` therefore come in a few shapes:

- slots: a power of two up to 32, then a multiple of 32 (at most the
  decoding's batch_size), for the sentences of a file;
- width: a multiple of 8 up to 64, of 16 up to 128, then of 32 (never past
  max_length), the extra columns PAD, which attention never reads; a slot
  alone (a sentence typed in) is at least 32 wide, so that sentences of
  ordinary length share one compiled search.

Padding changes no output: PAD columns are masked, and each sentence's
length limit counts its own tokens (`decoder.decode_limits`), not the
padded width. The same rules, in TensorFlow ops (`padded_rows`,
`padded_width`), shape the SavedModel's slots in its graph.
"""

from __future__ import annotations

import tensorflow as tf

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
    return int(padded_width(tf.constant(length), tf.constant(rows), max_length))


def bucket_rows(rows: int) -> int:
    """The padded row count of a batch of `rows` sentences."""
    return int(padded_rows(tf.constant(rows)))


def padded_width(width: tf.Tensor, rows: tf.Tensor, max_length: int) -> tf.Tensor:
    """`bucket_width` in TensorFlow ops: the padded width of rows x width ids."""
    buckets = bucket_widths(max_length)
    widths = tf.constant(buckets)
    wanted = tf.where(rows == 1, tf.maximum(width, min(ONE_ROW_WIDTH, max_length)), width)
    position = tf.searchsorted(widths, wanted[tf.newaxis], side="left")[0]
    # A row longer than max_length (cut by the caller in practice) keeps its width.
    return tf.maximum(tf.gather(widths, tf.minimum(position, len(buckets) - 1)), width)


def padded_rows(rows: tf.Tensor) -> tf.Tensor:
    """`bucket_rows` in TensorFlow ops."""
    powers = tf.constant([1, 2, 4, 8, 16, _ROW_STEP])
    power = tf.gather(powers, tf.minimum(tf.searchsorted(powers, rows[tf.newaxis])[0], 5))
    return tf.where(rows <= _ROW_STEP, power, -(-rows // _ROW_STEP) * _ROW_STEP)
