"""Damaged TFRecord shards: which shard, at which byte, and how many records are lost.

TensorFlow checks every record's checksums while reading, but its error names
neither the file nor what can be done. `check_shards` reads each shard alone
to say both; `damage_error` turns a read error into that one paragraph. With
--skip_corrupt_records a shard is read up to its first damaged record (the
framing after it cannot be trusted), and `report_losses` says how many
records that loses.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import tensorflow as tf
from absl import logging

from t2t_keras.errors import UserError

# A record: length (uint64), its masked CRC (uint32), the data, the data's masked CRC (uint32).
_HEADER, _FOOTER = 12, 4
_KIND = re.compile(r"(corrupted|truncated) record")


@dataclasses.dataclass(frozen=True)
class ShardDamage:
    """Where a shard stops reading.

    Attributes:
      path: the shard.
      offset: the byte where the first damaged record starts.
      kind: "corrupted" (a checksum does not match) or "truncated" (the file
        ends inside a record).
      records_read: the whole records before it.
      records_lost: the records from it to the shard's end, as their length
        fields frame them.
      exact: whether records_lost is exact; False when the framing itself is
        damaged, so that at least records_lost are lost.
    """

    path: str
    offset: int
    kind: str
    records_read: int
    records_lost: int
    exact: bool

    def describe(self) -> str:
        lost = f"{self.records_lost}" if self.exact else f"at least {self.records_lost}"
        return (
            f"{self.path} has a {self.kind} record at byte {self.offset}: {self.records_read} "
            f"records read before it, {lost} lost from it to the shard's end"
        )


def check_shard(path: str) -> ShardDamage | None:
    """Reads the shard whole; where it is damaged, or None."""
    read = tf.data.TFRecordDataset(path).ignore_errors().reduce(0, lambda n, _: n + 1)
    try:
        tf.data.TFRecordDataset(path).reduce(0, lambda n, _: n + 1)
    except tf.errors.DataLossError as error:
        match = _KIND.search(str(error))
        # The records before the damage read whole, so their lengths lead to its start.
        offset = _offset_after(path, int(read))
        lost, exact = _records_from(path, offset)
        return ShardDamage(
            path, offset, match.group(1) if match else "damaged", int(read), lost, exact
        )
    return None


def check_shards(paths: Sequence[str]) -> list[ShardDamage]:
    """The damaged shards among paths."""
    return [damage for damage in map(check_shard, paths) if damage is not None]


def report_losses(paths: Sequence[str], what: str) -> list[ShardDamage]:
    """Logs, for --skip_corrupt_records, each damaged shard and the records it loses."""
    damaged = check_shards(paths)
    for damage in damaged:
        logging.warning("%s: %s; skipping them (--skip_corrupt_records).", what, damage.describe())
    if damaged:
        lost = sum(damage.records_lost for damage in damaged)
        logging.warning(
            "%s: %d of %d shards damaged, %s%d records lost.",
            what,
            len(damaged),
            len(paths),
            "" if all(damage.exact for damage in damaged) else "at least ",
            lost,
        )
    return damaged


def damage_error(paths: Sequence[str], what: str, error: Exception) -> UserError:
    """A one-paragraph error for a read error of `paths`, naming the damaged shard."""
    damaged = check_shards(paths)
    where = "; ".join(damage.describe() for damage in damaged) or (
        f"no shard is damaged when read again ({str(error).splitlines()[0][:200]})"
    )
    return UserError(
        f"the {what} data cannot be read: {where}. Regenerate the shards (move them aside "
        "and rerun t2t-datagen), or rerun with --skip_corrupt_records to train on what "
        "reads; the checkpoints written so far are kept."
    )


@contextmanager
def naming_damaged_shards(paths: Sequence[str], what: str) -> Iterator[None]:
    """Turns a damaged-record error raised inside into `damage_error`."""
    try:
        yield
    except tf.errors.DataLossError as error:
        raise damage_error(paths, what, error) from None


def _offset_after(path: str, records: int) -> int:
    """The byte where record number `records` starts, from the lengths of those before it."""
    offset = 0
    with tf.io.gfile.GFile(path, "rb") as file:
        for _ in range(records):
            file.seek(offset)
            (length,) = struct.unpack("<Q", file.read(8))
            offset += _HEADER + length + _FOOTER
    return offset


def _records_from(path: str, offset: int) -> tuple[int, bool]:
    """Records framed from offset to the file's end; whether the framing held to it."""
    size = tf.io.gfile.stat(path).length
    count = 0
    with tf.io.gfile.GFile(path, "rb") as file:
        while offset < size:
            file.seek(offset)
            header = file.read(8)
            if len(header) < 8:
                return count + 1, False
            (length,) = struct.unpack("<Q", header)
            offset += _HEADER + length + _FOOTER
            count += 1
            if offset > size:
                return count, False
    return count, True
