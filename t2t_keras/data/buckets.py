"""The length buckets of tensor2tensor's batching, without TensorFlow.

`batching` builds its tf.data pipeline on these; the PyTorch peer of the
Multi30k benchmark forms its batches by the same rule from them.
"""

from __future__ import annotations

from t2t_keras.errors import UserError


class BatchingError(UserError, ValueError):
    """Batching settings that cannot work (a ValueError the binaries print cleanly)."""


def bucket_boundaries(min_length: int, max_length: int, step: float) -> list[int]:
    """Bucket lengths from min_length to max_length, each about `step` times the last.

    The rule is tensor2tensor's: b -> max(b + 1, floor(b * step)) while below
    max_length, then max_length itself closes the list. For example
    (8, 64, 1.1) -> [8, 9, ..., 20, 22, 24, 26, 28, 30, 33, 36, 39, 42, 46, 50,
    55, 60, 64].

    Args:
      min_length: the first boundary, at least 1.
      max_length: the last boundary, at least min_length.
      step: growth factor, above 1.

    Returns:
      Strictly increasing boundaries; the last is exactly max_length.
    """
    if min_length < 1:
        raise BatchingError(f"min_length_bucket={min_length}: it must be at least 1.")
    if max_length < min_length:
        raise BatchingError(
            f"max_length={max_length} is below min_length_bucket={min_length}: "
            "the bucket boundaries run from min_length_bucket up to max_length."
        )
    if step <= 1:
        raise BatchingError(f"length_bucket_step={step}: it must be above 1.")
    boundaries = []
    length = min_length
    while length < max_length:
        boundaries.append(length)
        length = max(length + 1, int(length * step))
    return [*boundaries, max_length]


def bucket_rows(boundary: int, batch_size: int) -> int:
    """Sentences in a batch of the bucket `boundary`: batch_size tokens, padding counted."""
    return max(1, batch_size // boundary)
