"""Averaging the model weights of a training directory's last checkpoints.

The paper decodes with the average of the last 5 checkpoints (written every
10 minutes) for base models and of the last 20 for big ones. The average holds
the model's weights only: an optimizer state averaged over steps means nothing,
so it is dropped, and the result can be decoded but not trained on.

The average is written as `ckpt-<newest step>` into its own directory (by
default `<output_dir>/averaged`) together with copies of run.json,
hparams.json and the vocabularies, so `load_trained(averaged_dir)` and
`t2t-decoder --output_dir=<averaged_dir>` take it as they take a training
directory. It never goes into the training directory itself, where t2t-trainer
would resume from it without an optimizer state. The directory is written
aside and moved into place whole (`files.replace_directory`), and what an
interrupted run left is removed by the next; `averaged.json` in it lists the
sources.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import stat
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from t2t_keras.errors import UserError
from t2t_keras.files import (
    make_temporary_dir,
    naming_failed_writes,
    remove_abandoned,
    replace_directory,
)
from t2t_keras.run import run_files
from t2t_keras.run.intact import DamagedCheckpointError
from t2t_keras.run.loading import find_checkpoint, read_run_files
from t2t_keras.run.weights import (
    build_model,
    checkpoint_key,
    checkpoint_model_shapes,
    make_checkpoint,
    model_variables,
    summarize_error,
    variable_path,
)

AVERAGED_DIR = "averaged"
AVERAGED_FILE = "averaged.json"


@dataclasses.dataclass(frozen=True)
class AveragedCheckpoint:
    """Where an average was written and what went into it.

    Attributes:
      checkpoint: the prefix of the averaged checkpoint, `<directory>/ckpt-<step>`.
      directory: the averaged directory, loadable like a training directory.
      sources: the averaged checkpoint prefixes, oldest first.
    """

    checkpoint: str
    directory: str
    sources: tuple[str, ...]


def select_checkpoints(
    output_dir: str, num_last_checkpoints: int = 5, checkpoints: Sequence[str] = ()
) -> list[str]:
    """The checkpoint prefixes to average, oldest first.

    Args:
      output_dir: the training directory.
      num_last_checkpoints: how many of the newest checkpoints its `checkpoint`
        state file lists; fewer are taken, with a warning, when fewer exist.
      checkpoints: explicit prefixes (or directories: their newest) instead.

    Raises:
      UserError: no such directory, no checkpoints, or a prefix that does not exist.
    """
    if checkpoints:
        chosen = [find_checkpoint(path) for path in checkpoints]
        for path in chosen:
            if chosen.count(path) > 1:
                raise UserError(
                    f"checkpoint {path} is listed twice; list each checkpoint to average once."
                )
        return sorted(chosen, key=checkpoint_step)
    if num_last_checkpoints < 1:
        raise UserError(
            f"cannot average the last {num_last_checkpoints} checkpoints; give a number >= 1."
        )
    output_dir = os.path.expanduser(output_dir)
    if not tf.io.gfile.isdir(output_dir):
        raise UserError(
            f"training directory {output_dir} does not exist; give the --output_dir "
            "t2t-trainer wrote its checkpoints to."
        )
    state = tf.train.get_checkpoint_state(output_dir)
    listed = list(state.all_model_checkpoint_paths) if state else []
    present = [path for path in listed if tf.io.gfile.exists(path + ".index")]
    if not present:
        raise UserError(
            f"{output_dir} holds no checkpoints (its 'checkpoint' state file lists no "
            "existing ckpt-N files); give the --output_dir t2t-trainer wrote them to."
        )
    chosen = present[-num_last_checkpoints:]
    if len(chosen) < num_last_checkpoints:
        logging.warning(
            "Asked to average the last %d checkpoints, but %s holds only %d; averaging those.",
            num_last_checkpoints,
            output_dir,
            len(chosen),
        )
    return chosen


def checkpoint_step(prefix: str) -> int:
    """The training step in a checkpoint prefix such as `TRAIN/ckpt-1000`."""
    match = re.search(r"-(\d+)$", os.path.basename(prefix))
    if match is None:
        raise UserError(
            f"checkpoint {prefix} has no step in its name; average checkpoints named "
            "ckpt-<step>, as t2t-trainer writes them."
        )
    return int(match.group(1))


def check_same_variables(
    shapes: dict[str, tuple[int, ...]],
    where: str,
    other_shapes: dict[str, tuple[int, ...]],
    other_where: str,
) -> None:
    """Refuses two sets of model weights that differ in names or shapes.

    Args:
      shapes: checkpoint key -> shape, of the first checkpoint (or model).
      where: what holds them, for the message.
      other_shapes: the same of the second.
      other_where: what holds those.

    Raises:
      UserError: naming the first variable that differs, both holders and both shapes.
    """
    differing = sorted(
        key
        for key in shapes.keys() | other_shapes.keys()
        if shapes.get(key) != other_shapes.get(key)
    )
    if not differing:
        return
    key = differing[0]
    others = f" ({len(differing) - 1} more variables differ)" if len(differing) > 1 else ""

    def has(holder: str, held: dict[str, tuple[int, ...]]) -> str:
        return (
            f"shape {list(held[key])} in {holder}" if key in held else f"is missing from {holder}"
        )

    raise UserError(
        f"cannot average weights of different models: variable {variable_path(key)} has "
        f"{has(where, shapes)} but {has(other_where, other_shapes)}{others}. Average "
        "checkpoints of one training run, written with the same hparams."
    )


def average_checkpoints(
    output_dir: str,
    num_last_checkpoints: int = 5,
    checkpoints: Sequence[str] = (),
    averaged_dir: str | None = None,
) -> AveragedCheckpoint:
    """Averages the model weights of checkpoints of output_dir into a loadable directory.

    Args:
      output_dir: the training directory; its run.json and hparams.json describe the model.
      num_last_checkpoints: average this many of the newest checkpoints.
      checkpoints: explicit checkpoint prefixes to average instead.
      averaged_dir: where to write the average; `<output_dir>/averaged` by default.
        An earlier average there is replaced whole.

    Returns:
      Where the average was written and which checkpoints went into it.

    Raises:
      UserError: no checkpoints, checkpoints of different models, missing run
        files, or an averaged_dir that is the training directory or holds other files.
    """
    output_dir = os.path.abspath(os.path.expanduser(output_dir))
    averaged_dir = os.path.abspath(
        os.path.expanduser(averaged_dir or os.path.join(output_dir, AVERAGED_DIR))
    )
    _check_averaged_dir(averaged_dir, output_dir)
    remove_abandoned(averaged_dir)
    sources = select_checkpoints(output_dir, num_last_checkpoints, checkpoints)
    shapes = _readable_shapes(sources[-1])
    for source in sources[:-1]:
        check_same_variables(_readable_shapes(source), source, shapes, sources[-1])
    run, hparams = read_run_files(output_dir)
    model = build_model(run["model"], hparams, use_xla=False)
    expected = {
        checkpoint_key(path): tuple(variable.shape)
        for path, variable in model_variables(model).items()
    }
    check_same_variables(
        shapes,
        sources[-1],
        expected,
        f"the model {os.path.join(output_dir, run_files.RUN_FILE)} describes",
    )
    logging.info(
        "Averaging the model weights of %s; the optimizer state is dropped.", ", ".join(sources)
    )
    _assign_means(model, sources)
    checkpoint = _write_directory(model, run, output_dir, sources, averaged_dir)
    logging.info("Wrote %s.", checkpoint)
    return AveragedCheckpoint(checkpoint, averaged_dir, tuple(sources))


def _write_directory(
    model: keras.Model,
    run: dict[str, Any],
    output_dir: str,
    sources: Sequence[str],
    averaged_dir: str,
) -> str:
    """Writes the averaged weights and the run files aside, then moves them to averaged_dir.

    Returns:
      The prefix of the averaged checkpoint, named for the newest source's step.
    """
    step = max(checkpoint_step(source) for source in sources)
    staging = make_temporary_dir(averaged_dir, "the averaged directory", "--averaged_dir")
    # The training directory's access, whatever the umask.
    os.chmod(staging, stat.S_IMODE(os.stat(output_dir).st_mode))
    try:
        with naming_failed_writes(averaged_dir):
            manager = tf.train.CheckpointManager(
                make_checkpoint(model), staging, max_to_keep=1, checkpoint_name="ckpt"
            )
            written = manager.save(checkpoint_number=step)
            _copy_run_files(output_dir, run, staging)
            record = {"output_dir": output_dir, "checkpoints": list(sources), "step": step}
            with open(os.path.join(staging, AVERAGED_FILE), "w") as file:
                json.dump(record, file, indent=2)
                file.write("\n")
        replace_directory(staging, averaged_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(averaged_dir, os.path.basename(written))


def _assign_means(model: keras.Model, sources: Sequence[str]) -> None:
    """Sets each model weight to its mean over the checkpoints, summed in float64.

    One variable at a time, so memory holds the model and one weight's sum.
    """
    readers = {source: tf.train.load_checkpoint(source) for source in sources}
    for path, variable in model_variables(model).items():
        key = checkpoint_key(path)
        total = np.zeros(variable.shape, np.float64)
        for source, reader in readers.items():
            try:
                total += reader.get_tensor(key)
            except (IndexError, tf.errors.OpError) as error:  # Truncated, or flipped bits.
                raise _damaged(source, error) from None
        variable.assign((total / len(readers)).astype(variable.dtype.as_numpy_dtype))


def _readable_shapes(source: str) -> dict[str, tuple[int, ...]]:
    """checkpoint_model_shapes, or an error naming a checkpoint whose index is damaged."""
    try:
        return checkpoint_model_shapes(source)
    except (IndexError, tf.errors.OpError) as error:
        raise _damaged(source, error) from None


def _damaged(source: str, error: Exception) -> DamagedCheckpointError:
    return DamagedCheckpointError(
        f"checkpoint {source} cannot be read ({summarize_error(error)}): its files are "
        "damaged. Average other checkpoints (--checkpoints) or fewer of the newest "
        "(--num_last_checkpoints)."
    )


def _check_averaged_dir(averaged_dir: str, output_dir: str) -> None:
    """Refuses a target whose replacement would lose the training run or other files."""
    real, training = os.path.realpath(averaged_dir), os.path.realpath(output_dir)
    if real == training or training.startswith(real + os.sep):
        raise UserError(
            f"the averaged directory {averaged_dir} is or contains the training directory "
            f"{output_dir}; an average there would replace the training run, or t2t-trainer "
            "would resume from it without an optimizer state. Give a separate "
            f"--averaged_dir, such as {os.path.join(output_dir, AVERAGED_DIR)}."
        )
    if os.path.isdir(averaged_dir) and os.listdir(averaged_dir):
        if not os.path.exists(os.path.join(averaged_dir, AVERAGED_FILE)):
            raise UserError(
                f"{averaged_dir} holds files but no {AVERAGED_FILE}, so it is not an earlier "
                "average this program would replace; give an empty or new --averaged_dir."
            )
    elif os.path.exists(averaged_dir) and not os.path.isdir(averaged_dir):
        raise UserError(f"{averaged_dir} is a file; give a directory as --averaged_dir.")


def _copy_run_files(output_dir: str, run: dict[str, Any], target: str) -> None:
    """Copies run.json, hparams.json and the vocabulary files run.json names."""
    names = {run_files.RUN_FILE, run_files.HPARAMS_FILE}
    names |= set(run_files.vocab_files(run))
    for name in sorted(names):
        source = os.path.join(output_dir, name)
        if not os.path.isfile(source):
            raise UserError(
                f"{source}, which {run_files.RUN_FILE} names, is missing; the averaged model "
                "could not be decoded without it. Copy it back into the training directory."
            )
        shutil.copy2(source, os.path.join(target, name))
