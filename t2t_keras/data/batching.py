"""Length-bucketed batching by tokens, the tensor2tensor way, in pure tf.data.

An example of length n (the longer of its inputs and targets) goes to the
smallest bucket boundary b >= n; its batch holds max(1, batch_size // b)
examples, and both features are padded with PAD to exactly [B, b]. So every
batch has B * L <= batch_size tokens, padding counted, and only
len(boundaries) distinct shapes reach the compiler.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from t2t_keras.data.buckets import BatchingError, bucket_boundaries, bucket_rows
from t2t_keras.data.ids import EOS_ID, PAD_ID

_FEATURES = ("inputs", "targets")

# The pipelines' functions use TensorFlow's ops, never Python control flow on
# tensors: converting them with autograph would only cost each process's start.
plain_function = tf.autograph.experimental.do_not_convert


@dataclasses.dataclass(frozen=True)
class BatchingConfig:
    """How a problem's examples are cut and batched; a model's hparams give it.

    `TransformerHParams.batching()` makes one from the hparams of the same names.
    """

    # Tokens per batch, padding counted: sentences * bucket length.
    batch_size: int
    # Longest example in tokens: training drops longer ones, other splits cut them.
    max_length: int
    # Shortest length bucket, in tokens.
    min_length_bucket: int = 8
    # Each length bucket's boundary is this factor above the one before.
    length_bucket_step: float = 1.1


def example_length(example: dict[str, tf.Tensor]) -> tf.Tensor:
    """The length an example is bucketed by: the longer of its two sequences.

    Args:
      example: {"inputs": int32 [S], "targets": int32 [T]}.

    Returns:
      int32 scalar max(S, T).
    """
    return tf.maximum(tf.size(example["inputs"]), tf.size(example["targets"]))


def filter_by_length(dataset: tf.data.Dataset, max_length: int) -> tf.data.Dataset:
    """Drops examples longer than max_length (for training).

    Args:
      dataset: examples {"inputs": int32 [S], "targets": int32 [T]}.
      max_length: longest example kept, in tokens.

    Returns:
      The examples with max(S, T) <= max_length, unchanged and in order.
    """
    return dataset.filter(plain_function(lambda example: example_length(example) <= max_length))


def truncate(dataset: tf.data.Dataset, max_length: int) -> tf.data.Dataset:
    """Cuts both sequences to max_length tokens (for evaluation and decoding).

    A sequence that was cut ends with EOS in place of its last kept token, so
    it still reads as finished; shorter sequences are left unchanged.

    Args:
      dataset: examples {"inputs": int32 [S], "targets": int32 [T]}.
      max_length: longest sequence kept, at least 1.

    Returns:
      Examples {"inputs": int32 [min(S, max_length)], "targets": int32 [min(T, max_length)]}.
    """
    if max_length < 1:
        raise BatchingError(f"max_length={max_length}: it must be at least 1.")

    def cut(sequence: tf.Tensor) -> tf.Tensor:
        kept = sequence[:max_length]
        was_cut = tf.size(sequence) > max_length
        is_last = tf.range(tf.size(kept)) == max_length - 1
        return tf.where(was_cut & is_last, tf.constant(EOS_ID, sequence.dtype), kept)

    def cut_example(example: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        return {**example, **{name: cut(example[name]) for name in _FEATURES}}

    return dataset.map(plain_function(cut_example), num_parallel_calls=tf.data.AUTOTUNE)


def batch_by_length(
    dataset: tf.data.Dataset,
    batch_size: int,
    max_length: int,
    min_length_bucket: int = 8,
    length_bucket_step: float = 1.1,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """Batches examples of similar length, about batch_size tokens per batch.

    Examples must be at most max_length long (use `filter_by_length` or
    `truncate` first); a longer one stops the pipeline with an error naming
    both lengths. When max_length < min_length_bucket there is one bucket,
    max_length.

    Args:
      dataset: examples {"inputs": int32 [S], "targets": int32 [T]}, nothing else.
      batch_size: tokens per batch, padding counted (tensor2tensor's meaning);
        at least max_length.
      max_length: longest example, in tokens; the last bucket boundary.
      min_length_bucket: the first bucket boundary.
      length_bucket_step: each boundary is about this factor above the last.
      drop_remainder: drop each bucket's last, incomplete batch.

    Returns:
      Batches {"inputs": int32 [B, L], "targets": int32 [B, L]}, zero-padded,
      where L is a bucket boundary and B = max(1, batch_size // L); only the
      last batch of a bucket may be smaller.
    """
    _check_batch_size(batch_size, max_length)
    boundaries = bucket_boundaries(
        min(min_length_bucket, max_length), max_length, length_bucket_step
    )
    lengths = tf.constant(boundaries, tf.int32)
    batch_sizes = tf.constant([bucket_rows(length, batch_size) for length in boundaries], tf.int64)

    def bucket_of(example: dict[str, tf.Tensor]) -> tf.Tensor:
        return _bucket_index(example_length(example), lengths, max_length)

    def batch_bucket(bucket: tf.Tensor, window: tf.data.Dataset) -> tf.data.Dataset:
        shape = tf.cast(lengths[bucket], tf.int64)[tf.newaxis]  # [L]
        return window.padded_batch(
            batch_sizes[bucket],
            padded_shapes={name: shape for name in _FEATURES},
            padding_values={name: tf.constant(PAD_ID, tf.int32) for name in _FEATURES},
            drop_remainder=drop_remainder,
        )

    return dataset.group_by_window(
        key_func=plain_function(bucket_of),
        reduce_func=plain_function(batch_bucket),
        window_size_func=plain_function(lambda bucket: batch_sizes[bucket]),
    )


def _check_batch_size(batch_size: int, max_length: int) -> None:
    """Refuses a batch_size that cannot hold one example of max_length tokens."""
    if batch_size < max_length:
        raise BatchingError(
            f"batch_size={batch_size} is smaller than max_length={max_length}. batch_size "
            "counts tokens per batch, padding included (tensor2tensor's meaning), not "
            "sentences, so it must be at least max_length; e.g. batch_size=4096 for "
            "max_length=256."
        )


def _bucket_index(length: tf.Tensor, boundaries: tf.Tensor, max_length: int) -> tf.Tensor:
    """The bucket of an example of `length` tokens: the smallest boundary >= length.

    Args:
      length: int32 scalar, the example's length; over max_length stops the
        pipeline with an error.
      boundaries: int32 [N], the bucket boundaries in increasing order.
      max_length: the last boundary.

    Returns:
      int64 scalar index into boundaries.
    """
    tf.debugging.assert_less_equal(
        length,
        max_length,
        message=f"An example is longer than max_length={max_length}; "
        "apply filter_by_length or truncate before batch_by_length.",
    )
    return tf.searchsorted(boundaries, length[tf.newaxis], out_type=tf.int64)[0]
