"""Fine-tuning: a new run that starts from a trained run's weights (`--warm_start_from`).

The parent gives its model weights only: the new run has its own optimizer,
step and schedule, its own problem and hparams set. What must match is what
the weights mean: the vocabularies (every id the same piece) and the
hparams that set the weights' shapes. A mismatch is refused in one
paragraph naming both sides, before anything is written.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import keras
import tensorflow as tf
from absl import logging

from t2t_keras.data.problem import Problem
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.files import write_atomically
from t2t_keras.hparam import HParams
from t2t_keras.run import run_files
from t2t_keras.run.loading import find_checkpoint, read_run_files
from t2t_keras.run.weights import restore_model, summarize_error

# run.json's record of the run a fine-tuning started from.
PARENT_KEY = "warm_start_from"


@dataclasses.dataclass(frozen=True)
class Parent:
    """The trained run a fine-tuning starts from."""

    # The checkpoint prefix whose weights are taken.
    checkpoint: str
    # The directory of its run files (run.json, hparams.json, vocabularies).
    directory: str
    run: dict[str, Any]
    hparams: HParams

    def record(self) -> dict[str, Any]:
        """What run.json says of the parent."""
        record = {"checkpoint": self.checkpoint, "problem": self.run["problem"]}
        if "hparams_set" in self.run:
            record["hparams_set"] = self.run["hparams_set"]
        return record

    def vocab_path(self, side: str) -> str:
        """The parent's vocabulary file of `side` ("inputs" or "targets"), or "bytes"."""
        name = self.run.get("vocab", {}).get(side, "bytes")
        return name if name == "bytes" else os.path.join(self.directory, name)


def find_parent(path: str) -> Parent:
    """The run `path` names: a training directory (its newest checkpoint), an
    averaged directory, or a checkpoint prefix (run files read beside it).

    Raises:
      UserError: nothing at path, no checkpoint, or no run files beside it.
    """
    try:
        checkpoint = find_checkpoint(path)
        directory = os.path.dirname(checkpoint)
        run, hparams = read_run_files(directory)
    except UserError as error:
        raise UserError(
            f"--warm_start_from={path} names no trained run to start from: {error}"
        ) from None
    return Parent(os.path.abspath(checkpoint), os.path.abspath(directory), run, hparams)


def check_fits(parent: Parent, hparams: HParams, encoders: dict[str, Vocabulary]) -> None:
    """Refuses a parent whose weights would mean something else in the new run.

    Args:
      parent: the run to start from.
      hparams: the new run's, vocabulary sizes filled in.
      encoders: the new problem's {"inputs", "targets"} vocabularies.
    """
    for side, vocab in encoders.items():
        ours = getattr(vocab, "model_path", "bytes")
        theirs = parent.vocab_path(side)
        if _contents(ours) != _contents(theirs):
            raise UserError(
                f"the {side} vocabulary of the new run's data ({ours}) is not the one "
                f"{parent.directory} was trained with ({theirs}), so every id would mean "
                "another piece. Generate the new data with the parent's vocabulary: "
                f"t2t-datagen --vocab_from={parent.directory} --data_dir=NEW_DATA_DIR ..., "
                "then train with --data_dir=NEW_DATA_DIR."
            )
    saved, new = parent.hparams.values(), hparams.values()
    changed = [
        name
        for name in getattr(type(hparams), "shape_fields", ())
        if name in saved and saved[name] != new.get(name)
    ]
    if changed:
        listing = ", ".join(f"{name}={new[name]!r} (parent {saved[name]!r})" for name in changed)
        raise UserError(
            f"the new run's hparams give its weights other shapes than those of "
            f"{parent.checkpoint}: {listing}. Fine-tuning keeps the parent's architecture: "
            f"use its hparams set ({parent.run.get('hparams_set', 'see its hparams.json')}) "
            "and change only what leaves the shapes alone (dropout, learning rate, schedule, "
            "batch size)."
        )


def start_from(model: keras.Model, parent: Parent, optimizer: Any = None) -> None:
    """Loads the parent's model weights into `model`, and with `optimizer` its
    optimizer state and step too (the schedule goes on from the parent's step).

    Raises:
      UserError: an optimizer asked for, but the checkpoint holds none that fits
        (an averaged checkpoint keeps the weights only).
    """
    restore_model(model, parent.checkpoint)
    if optimizer is None:
        kept = "optimizer, step and schedule start afresh"
    else:
        _restore_optimizer(optimizer, parent.checkpoint)
        kept = "so are its optimizer state and step, from which the schedule goes on"
    logging.info(
        "Fine-tuning from %s (problem %s): its weights are loaded; %s.",
        parent.checkpoint,
        parent.run["problem"],
        kept,
    )


def _restore_optimizer(optimizer: Any, path: str) -> None:
    checkpoint = tf.train.Checkpoint(optimizer={v.path: v.value for v in optimizer.variables})
    try:
        checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as error:
        raise UserError(
            f"--warm_start_optimizer takes the parent's optimizer state, but {path} holds "
            f"none that fits this optimizer ({summarize_error(error)}): an averaged checkpoint "
            "keeps the weights only, and a float16 run's optimizer differs. Give the parent's "
            "training directory or one of its ckpt-N, or drop --warm_start_optimizer."
        ) from None


def adopt_vocabularies(problem: Problem, data_dir: str, parent: Parent) -> None:
    """Puts the parent's vocabularies where `problem` reads its own in data_dir, so
    that generating its data encodes it with them (`t2t-datagen --vocab_from`).

    A vocabulary data_dir already holds is kept if it is the parent's and refused
    otherwise: the shards beside it were encoded with it.
    """
    vocab_paths = getattr(problem, "vocab_paths", None)
    if vocab_paths is None or getattr(problem, "vocab_type", "") == "byte":
        if any(parent.vocab_path(side) != "bytes" for side in ("inputs", "targets")):
            raise UserError(
                f"problem {problem.name!r} has no vocabulary files to take from "
                f"{parent.directory} (it encodes bytes or builds its own); --vocab_from needs "
                "a problem with SentencePiece vocabularies."
            )
        return
    reversed_ = getattr(problem, "was_reversed", False)
    sources: dict[str, set[str]] = {}
    for side, path in vocab_paths(data_dir).items():  # The forward direction's sides.
        parent_side = {"inputs": "targets", "targets": "inputs"}[side] if reversed_ else side
        sources.setdefault(path, set()).add(parent.vocab_path(parent_side))
    for path, given in sources.items():
        if len(given) > 1 or "bytes" in given:
            raise UserError(
                f"problem {problem.name!r} uses one vocabulary {path} for inputs and targets, "
                f"but {parent.directory} was trained with {' and '.join(sorted(given))}; "
                "fine-tune it on a problem with the same vocabulary layout."
            )
        _adopt(given.pop(), path)


def _adopt(source: str, path: str) -> None:
    """Copies the vocabulary file source to path, or checks the one there is the same."""
    if tf.io.gfile.exists(path):
        if _contents(path) != _contents(source):
            raise UserError(
                f"{path} already holds another vocabulary than {source}, and the shards "
                "beside it were encoded with it; give a new --data_dir for the data encoded "
                "with the parent's vocabulary."
            )
        return
    tf.io.gfile.makedirs(os.path.dirname(path))
    write_atomically(_contents(source), path)
    logging.info("Took the vocabulary %s as %s.", source, path)


def _contents(path: str) -> bytes:
    if path == "bytes":
        return b"bytes"
    with tf.io.gfile.GFile(path, "rb") as file:
        return file.read()


def recorded_parent(output_dir: str) -> dict[str, Any] | None:
    """The parent run.json of output_dir records, if any (kept when a run resumes)."""
    return (run_files.read_run(output_dir) or {}).get(PARENT_KEY)
