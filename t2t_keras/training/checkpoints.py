"""Checkpoints named ckpt-<global step>, saved by steps and/or seconds, the newest K kept.

What a checkpoint holds (each variable by its Keras path) is `t2t_keras.run.weights`.
TensorFlow writes a checkpoint's files before it points the `checkpoint` state
file at them (itself replaced atomically), so a process killed mid-save leaves
the previous checkpoint as the newest one, whole; and the oldest checkpoint
is dropped from the state file before its files are deleted, so the state
never lists one that is gone. A checkpoint damaged later is skipped on resume
for the newest one that reads whole (`t2t_keras.run.intact`).
"""

from __future__ import annotations

import os
import shutil
import time

import tensorflow as tf
from absl import logging

from t2t_keras.errors import UserError
from t2t_keras.run import intact
from t2t_keras.run.weights import summarize_error


class _StateFirstManager(tf.train.CheckpointManager):
    """TensorFlow's CheckpointManager, but the state file drops a checkpoint before its files go.

    TensorFlow's deletes the oldest checkpoint's files, then rewrites the state
    file: a process killed in between leaves a state that lists a checkpoint
    no longer on disk.
    """

    def _sweep(self) -> None:
        dropped = []
        while self._max_to_keep and len(self._maybe_delete) > self._max_to_keep:
            dropped.append(self._maybe_delete.popitem(last=False)[0])
        if not dropped:
            return
        self._record_state()
        for prefix in dropped:  # The index first: a half-deleted checkpoint has none.
            for pattern in (".index", ".data-?????-of-?????"):
                for path in tf.io.gfile.glob(prefix + pattern):
                    tf.io.gfile.remove(path)


class CheckpointSaver:
    """Saves and restores a tf.train.Checkpoint in output_dir.

    Under MultiWorkerMirroredStrategy every worker must take part in a save;
    only the chief's lands in output_dir, the others write to a scratch
    directory that is removed.

    Args:
      checkpoint: the model and optimizer.
      output_dir: where checkpoints live.
      keep: how many of the newest to keep.
      every_steps: save when the step is a multiple of this; 0 = never by steps.
      every_secs: save when this many seconds passed since the last save; 0 = never by time.
      chief: whether this worker is the one that writes output_dir.
      worker: this worker's name, for its scratch directory.
    """

    def __init__(
        self,
        checkpoint: tf.train.Checkpoint,
        output_dir: str,
        keep: int,
        every_steps: int,
        every_secs: int,
        chief: bool = True,
        worker: str = "chief",
    ) -> None:
        self.checkpoint = checkpoint
        self.output_dir = output_dir
        self.every_steps = every_steps
        self.every_secs = every_secs
        self.chief = chief
        self.keep = keep
        self.directory = output_dir if chief else os.path.join(output_dir, f".scratch_{worker}")
        self._manager: tf.train.CheckpointManager | None = None
        self.last_step = -1
        self.last_time = time.monotonic()

    @property
    def manager(self) -> tf.train.CheckpointManager:
        """Created on first use: after `restore`, which may rewrite the state file it reads."""
        if self._manager is None:
            self._manager = _StateFirstManager(
                self.checkpoint,
                self.directory,
                max_to_keep=self.keep,
                checkpoint_name=intact.CHECKPOINT_NAME,
            )
        return self._manager

    def restore(self) -> str | None:
        """Restores the newest checkpoint of output_dir that reads whole; None: a fresh start.

        A damaged newer checkpoint is skipped with a warning; on the chief, the
        `checkpoint` state file then lists only the checkpoints kept.
        """
        path, damaged = intact.restore_newest(self.output_dir, self._restore_one)
        if path is None:
            return None
        if self.chief and (damaged or not intact.state_readable(self.output_dir)):
            kept = [p for p in intact.checkpoint_prefixes(self.output_dir) if p not in damaged]
            intact.rewrite_state(self.output_dir, kept)
        logging.info("Resumed from %s.", path)
        return path

    def _restore_one(self, path: str) -> None:
        try:
            status = self.checkpoint.restore(path)
            if any(name.startswith("seeds/") for name, _ in tf.train.list_variables(path)):
                status.assert_consumed()
            else:
                logging.warning(
                    "%s holds no dropout seed states (it was written by an earlier version): "
                    "training resumes from it, but not bit for bit as a run never stopped.",
                    path,
                )
                status.expect_partial()
        except (AssertionError, ValueError, tf.errors.OpError) as error:
            raise UserError(
                f"checkpoint {path} does not fit this model ({summarize_error(error)}); resume "
                "with the hparams it was trained with, or choose another --output_dir."
            ) from None

    def due(self, step: int) -> bool:
        """Whether a save is due after `step`."""
        if step == self.last_step:
            return False
        by_steps = self.every_steps and step % self.every_steps == 0
        by_time = self.every_secs and time.monotonic() - self.last_time >= self.every_secs
        return bool(by_steps or by_time)

    def save(self, step: int) -> str | None:
        """Saves ckpt-<step> (once per step); returns its path on the chief."""
        if step == self.last_step:
            return self.manager.latest_checkpoint if self.chief else None
        try:
            path = self.manager.save(checkpoint_number=step)
        except tf.errors.OpError:
            # A failed save (a full disk) leaves TensorFlow's staging directory behind.
            prefix = os.path.join(self.directory, f"{intact.CHECKPOINT_NAME}-{step}")
            if tf.io.gfile.isdir(f"{prefix}_temp"):
                tf.io.gfile.rmtree(f"{prefix}_temp")
            raise
        self.last_step, self.last_time = step, time.monotonic()
        if not self.chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)
            return None
        logging.info("Saved %s.", path)
        return path
