"""TFRecord shards: names, atomic sharded writing, parsing.

A split of a problem is `N` files `<problem>-<split>-00000-of-0000N` in
data_dir. Shards are written under a temporary name and renamed only when
every shard of the split is complete, so an interrupted run never leaves a
file that looks finished.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from typing import Any

import tensorflow as tf
from absl import logging

from t2t_keras.files import write_atomically

INCOMPLETE = ".incomplete"
_PROGRESS_EVERY_SECONDS = 10.0


def shard_paths(data_dir: str, problem_name: str, split: str, num_shards: int) -> list[str]:
    """The final file names of a split's shards."""
    return [
        os.path.join(data_dir, f"{problem_name}-{split}-{index:05d}-of-{num_shards:05d}")
        for index in range(num_shards)
    ]


def split_pattern(data_dir: str, problem_name: str, split: str) -> str:
    """A glob matching the split's shards, whatever their number."""
    return os.path.join(data_dir, f"{problem_name}-{split}-[0-9]*-of-[0-9]*")


def text_paths(data_dir: str, problem_name: str, split: str) -> tuple[str, str]:
    """Where a split's kept text lives: `<problem>-<split>.sources` and `.references`."""
    base = os.path.join(data_dir, f"{problem_name}-{split}")
    return f"{base}.sources", f"{base}.references"


def write_text(pairs: list[tuple[str, str]], paths: tuple[str, str], num_shards: int) -> None:
    """Writes (source, reference) pairs one a line, in the order the split's shards hold them.

    `write_shards` deals examples round-robin, and readers go shard by shard,
    so line i of each file belongs to the i-th record read.
    """
    ordered = [
        pairs[i] for shard in range(num_shards) for i in range(shard, len(pairs), num_shards)
    ]
    for column, path in enumerate(paths):
        lines = "".join(" ".join(pair[column].splitlines()) + "\n" for pair in ordered)
        write_atomically(lines.encode("utf-8"), path)


def to_example(features: dict[str, list[int]]) -> bytes:
    """{"inputs": ids, "targets": ids} -> serialized tf.train.Example with int64 lists."""
    feature = {
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=ids))
        for name, ids in features.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def parse_example(record: tf.Tensor) -> dict[str, tf.Tensor]:
    """Serialized Example -> {"inputs": int32 [S], "targets": int32 [T]}."""
    spec = {
        "inputs": tf.io.VarLenFeature(tf.int64),
        "targets": tf.io.VarLenFeature(tf.int64),
    }
    parsed = tf.io.parse_single_example(record, spec)
    return {name: tf.cast(tf.sparse.to_dense(value), tf.int32) for name, value in parsed.items()}


def write_shards(examples: Iterable[dict[str, list[int]]], paths: list[str], what: str) -> int:
    """Writes examples round-robin into the shards at `paths`, atomically.

    Args:
      examples: {"inputs": ids, "targets": ids} dicts, streamed.
      paths: final shard paths; temporary files sit beside them meanwhile.
      what: a label for progress lines, e.g. "my_problem train".

    Returns:
      The number of examples written.
    """
    temporary = [path + INCOMPLETE for path in paths]
    writers = [tf.io.TFRecordWriter(path) for path in temporary]
    count, start, last_report = 0, time.monotonic(), time.monotonic()
    try:
        try:
            for count, example in enumerate(examples, start=1):
                writers[(count - 1) % len(writers)].write(to_example(example))
                if time.monotonic() - last_report > _PROGRESS_EVERY_SECONDS:
                    last_report = time.monotonic()
                    rate = count / (last_report - start)
                    logging.info("%s: %d examples written (%.0f/s)", what, count, rate)
        finally:
            for writer in writers:
                writer.close()
    except BaseException:  # A failed write (a full disk) leaves no temporary shards.
        for path in temporary:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        raise
    for source, target in zip(temporary, paths, strict=True):
        os.replace(source, target)
    elapsed = max(time.monotonic() - start, 1e-9)
    logging.info("%s: %d examples in %d shards (%.0f/s)", what, count, len(paths), count / elapsed)
    return count


def remove_incomplete(data_dir: str, prefix: str) -> None:
    """Deletes temporary shards left by an interrupted run."""
    if not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        if name.startswith(prefix) and name.endswith(INCOMPLETE):
            os.remove(os.path.join(data_dir, name))


def count_records(paths: list[str]) -> int:
    """Number of records in the given TFRecord files."""
    dataset: Any = tf.data.TFRecordDataset(paths)
    return int(dataset.reduce(0, lambda count, _: count + 1))


def has_text(data_dir: str, problem_name: str, split: str) -> bool:
    """Whether the split's text was kept beside its shards (`text_paths`)."""
    return all(tf.io.gfile.exists(path) for path in text_paths(data_dir, problem_name, split))
