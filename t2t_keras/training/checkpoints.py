"""Checkpoints named ckpt-<global step>, saved by steps and/or seconds, the newest K kept.

A checkpoint maps each variable's Keras path ("transformer/encoder_0/...",
"adam/...") to its value, so it does not depend on how the Python objects
hold their layers (Keras layer lists are invisible to tf.train.Checkpoint).
Models and optimizers therefore get fixed names: `build_model` and
`optimizer_from_hparams` give them.

TensorFlow writes a checkpoint's files before it points the `checkpoint` state
file at them (itself replaced atomically), so a process killed mid-save leaves
the previous checkpoint as the newest one, whole.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from t2t_keras import registry
from t2t_keras.errors import UserError

# make_checkpoint's `model` dict stores variable `path` under this key;
# TensorFlow escapes "." as ".." and "/" as ".S" in object names.
_MODEL_PREFIX = "model/"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def build_model(model_name: str, hparams: Any, **kwargs: Any) -> keras.Model:
    """The registered model, named `model_name` (its checkpoint keys start with it), built."""
    model = registry.model(model_name)(hparams, name=model_name, **kwargs)
    model.build()
    return model


def model_variables(model: keras.Model) -> dict[str, Any]:
    """The model's variables by path, random-seed states left out."""
    return {v.path: v.value for v in model.variables if v.name != "seed_generator_state"}


def make_checkpoint(model: keras.Model, optimizer: Any = None) -> tf.train.Checkpoint:
    """A tf.train.Checkpoint of the model's (and optimizer's) variables, keyed by path.

    The model's random-seed states are left out: their paths are numbered in
    creation order, which another process need not share.
    """
    kept = {"model": model_variables(model)}
    if optimizer is not None:
        kept["optimizer"] = {v.path: v.value for v in optimizer.variables}
    return tf.train.Checkpoint(**kept)


def checkpoint_key(path: str) -> str:
    """The key under which make_checkpoint stores the model variable at `path`."""
    escaped = path.replace(".", "..").replace("/", ".S")
    return f"{_MODEL_PREFIX}{escaped}{_VALUE_SUFFIX}"


def variable_path(key: str) -> str:
    """The model variable path a checkpoint key stands for (the inverse of checkpoint_key)."""
    escaped = key.removeprefix(_MODEL_PREFIX).removesuffix(_VALUE_SUFFIX)
    return re.sub(r"\.(.)", lambda match: "/" if match.group(1) == "S" else match.group(1), escaped)


def checkpoint_model_shapes(prefix: str) -> dict[str, tuple[int, ...]]:
    """The shapes of a checkpoint's model weights by checkpoint key (optimizer state left out)."""
    return {
        key: tuple(shape)
        for key, shape in tf.train.list_variables(prefix)
        if key.startswith(_MODEL_PREFIX) and key.endswith(_VALUE_SUFFIX)
    }


def restore_model(model: keras.Model, path: str) -> None:
    """Loads a checkpoint's model weights (its optimizer state is left unread).

    Raises:
      UserError: the checkpoint lacks some of the model's weights, has other
        shapes, or holds weights the model does not have (a larger model's).
    """
    try:
        make_checkpoint(model).restore(path).expect_partial().assert_existing_objects_matched()
        extra = set(checkpoint_model_shapes(path)) - {
            checkpoint_key(name) for name in model_variables(model)
        }
    except (AssertionError, ValueError, tf.errors.OpError) as error:
        raise UserError(
            f"checkpoint {path} does not hold this model's weights ({_summary(error)})."
        ) from None
    if extra:
        raise UserError(
            f"checkpoint {path} does not hold this model's weights: it has {len(extra)} "
            f"weights this model lacks, e.g. {variable_path(min(extra))}, so it was written "
            "by a larger model."
        )


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
        directory = output_dir if chief else os.path.join(output_dir, f".scratch_{worker}")
        self.manager = tf.train.CheckpointManager(
            checkpoint, directory, max_to_keep=keep, checkpoint_name="ckpt"
        )
        self.last_step = -1
        self.last_time = time.monotonic()

    def restore(self) -> str | None:
        """Restores the newest checkpoint of output_dir; returns its path (None: fresh start)."""
        path = tf.train.latest_checkpoint(self.output_dir)
        if path is None:
            return None
        try:
            self.checkpoint.restore(path).assert_consumed()
        except (AssertionError, ValueError, tf.errors.OpError) as error:
            raise UserError(
                f"checkpoint {path} does not fit this model ({_summary(error)}); resume with "
                "the hparams it was trained with, or choose another --output_dir."
            ) from None
        logging.info("Resumed from %s.", path)
        return path

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
        path = self.manager.save(checkpoint_number=step)
        self.last_step, self.last_time = step, time.monotonic()
        if not self.chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)
            return None
        logging.info("Saved %s.", path)
        return path


def _summary(error: Exception) -> str:
    """The error's type and the first line of its message, for a one-paragraph error."""
    return f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
