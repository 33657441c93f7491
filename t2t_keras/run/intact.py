"""The newest checkpoint of a directory that reads back whole.

A checkpoint can be damaged after it was written: a disk error, a copy cut
short, a file truncated or overwritten by hand. Resuming and decoding then
fall back to the newest checkpoint that reads completely, with a warning
naming both; they never start from scratch in silence, and when no
checkpoint reads they stop with an error listing what is wrong with each.
The damaged files are left as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import tensorflow as tf
from absl import logging

from t2t_keras.errors import UserError
from t2t_keras.run.weights import summarize_error

CHECKPOINT_NAME = "ckpt"
_STEP = re.compile(rf"{CHECKPOINT_NAME}-(\d+)$")


class DamagedCheckpointError(UserError):
    """A checkpoint (or every checkpoint of a directory) whose files do not read back whole."""


def checkpoint_prefixes(directory: str) -> list[str]:
    """The directory's checkpoint prefixes, the highest step first.

    Those the `checkpoint` state file lists, or, when that file is missing or
    unreadable while ckpt-N.index files exist, those files (with a warning).
    """
    listed = None
    try:
        state = tf.train.get_checkpoint_state(directory)
        if state is not None:
            listed = [*state.all_model_checkpoint_paths, state.model_checkpoint_path]
    except Exception as error:  # A damaged state file: TensorFlow raises a text-format error.
        logging.warning(
            "The checkpoint state file of %s cannot be read (%s); looking for ckpt-N files.",
            directory,
            summarize_error(error),
        )
    found = [path.removesuffix(".index") for path in _index_files(directory)]
    if listed is None and found:
        logging.warning("%s: taking the checkpoints found: %s.", directory, _names(found))
    prefixes = {os.path.join(directory, os.path.basename(p)) for p in listed or found}
    return sorted((p for p in prefixes if _step(p) is not None), key=_step_or_zero, reverse=True)


def damage(prefix: str) -> str | None:
    """What keeps the checkpoint from reading back whole, or None if every tensor reads.

    Each tensor is read, so its checksum is checked: a truncated or
    bit-flipped data or index file is found.
    """
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception as error:  # Truncation shows as IndexError, flipped bits as DataLossError.
        return summarize_error(error)
    return None


def restore_newest(
    directory: str, restore: Callable[[str], None], using: str = "resuming from"
) -> tuple[str | None, list[str]]:
    """Calls `restore(prefix)` on the newest checkpoint of directory that reads whole.

    Args:
      directory: the training (or averaged) directory.
      restore: loads a checkpoint; may raise on a checkpoint that does not fit
        the model, which is passed on when the checkpoint itself reads whole.
      using: how the warning names what is done with the fallback.

    Returns:
      (the checkpoint restored, or None when the directory has none; the
      damaged ones skipped, newest first).

    Raises:
      UserError: there are checkpoints but none reads completely.
    """
    damaged: list[tuple[str, str]] = []
    for prefix in checkpoint_prefixes(directory):
        try:
            restore(prefix)
        except Exception:
            reason = damage(prefix)
            if reason is None:
                raise
            damaged.append((prefix, reason))
            continue
        for bad, reason in damaged:
            logging.warning(
                "Checkpoint %s cannot be read (%s); %s %s, the newest checkpoint that reads "
                "completely.",
                bad,
                reason,
                using,
                prefix,
            )
        return prefix, [bad for bad, _ in damaged]
    if damaged:
        listing = "; ".join(f"{prefix}: {reason}" for prefix, reason in damaged)
        raise DamagedCheckpointError(
            f"no checkpoint in {directory} reads completely ({listing}). They are damaged "
            "(a disk error or a copy cut short); restore them from a backup, or move them "
            "aside to start afresh."
        )
    return None, []


def state_readable(directory: str) -> bool:
    """Whether the directory's `checkpoint` state file exists and parses."""
    try:
        return tf.train.get_checkpoint_state(directory) is not None
    except Exception:  # A damaged state file.
        return False


def rewrite_state(directory: str, kept: list[str]) -> None:
    """Points the `checkpoint` state file at `kept` (newest first) only; files stay on disk."""
    names = [os.path.basename(prefix) for prefix in reversed(kept)]
    tf.compat.v1.train.update_checkpoint_state(directory, names[-1], names)


def _index_files(directory: str) -> list[str]:
    return tf.io.gfile.glob(os.path.join(directory, f"{CHECKPOINT_NAME}-*.index"))


def _step(prefix: str) -> int | None:
    match = _STEP.search(os.path.basename(prefix))
    return int(match.group(1)) if match else None


def _names(prefixes: list[str]) -> str:
    return ", ".join(os.path.basename(p) for p in sorted(prefixes, key=_step_or_zero))


def _step_or_zero(prefix: str) -> int:
    return _step(prefix) or 0
