"""A model's weights in checkpoints: building the model, keyed checkpoints, restoring.

A checkpoint maps each variable's Keras path ("transformer/encoder_0/...",
"adam/...") to its value, so it does not depend on how the Python objects
hold their layers (Keras layer lists are invisible to tf.train.Checkpoint).
Models and optimizers therefore get fixed names: `build_model` and
`optimizer_from_hparams` give them.
"""

from __future__ import annotations

import re
from typing import Any

import keras
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams

# make_checkpoint's `model` dict stores variable `path` under this key;
# TensorFlow escapes "." as ".." and "/" as ".S" in object names.
_MODEL_PREFIX = "model/"
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def build_model(
    model_name: str, hparams: HParams, use_xla: bool = True, dtype: str | None = None
) -> keras.Model:
    """The registered model, named `model_name` (its checkpoint keys start with it), built."""
    model = registry.model(model_name)(hparams, name=model_name, use_xla=use_xla, dtype=dtype)
    model.build()
    return model


def model_variables(model: keras.Model) -> dict[str, Any]:
    """The model's variables by path, random-seed states left out."""
    return {v.path: v.value for v in model.variables if v.name != "seed_generator_state"}


def make_checkpoint(
    model: keras.Model, optimizer: Any = None, seed_states: bool = False
) -> tf.train.Checkpoint:
    """A tf.train.Checkpoint of the model's (and optimizer's) variables, keyed by path.

    The model's random-seed states (dropout's) are kept only if asked, under
    "seeds" by their order in the model: their paths are numbered in creation
    order, which another process need not share. Training keeps them, so a
    resumed run draws the dropout masks an uninterrupted one would.
    """
    kept: dict[str, Any] = {"model": model_variables(model)}
    if optimizer is not None:
        kept["optimizer"] = {v.path: v.value for v in optimizer.variables}
    if seed_states:
        seeds = [v.value for v in model.variables if v.name == "seed_generator_state"]
        kept["seeds"] = {str(index): seed for index, seed in enumerate(seeds)}
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
            f"checkpoint {path} does not hold this model's weights ({summarize_error(error)})."
        ) from None
    if extra:
        raise UserError(
            f"checkpoint {path} does not hold this model's weights: it has {len(extra)} "
            f"weights this model lacks, e.g. {variable_path(min(extra))}, so it was written "
            "by a larger model."
        )


def summarize_error(error: Exception) -> str:
    """The error's type and the first line of its message, for a one-paragraph error."""
    return f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
