"""What output_dir holds besides checkpoints: hparams.json, run.json, the vocabularies.

`run.json` names the problem, the model and the vocabulary files (copied into
output_dir), so the decoder needs nothing but output_dir. A rerun into the
same output_dir must train the same problem and model with the same shapes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import tensorflow as tf
from absl import logging

from t2t_keras.errors import UserError
from t2t_keras.files import write_atomically
from t2t_keras.hparam import HParams

HPARAMS_FILE = "hparams.json"
RUN_FILE = "run.json"


def vocab_files(run: dict[str, Any]) -> list[str]:
    """The vocabulary files run.json names, sorted; a byte vocabulary has none."""
    return sorted(set(run.get("vocab", {}).values()) - {"bytes"})


def read_run(output_dir: str) -> dict[str, Any] | None:
    """run.json of output_dir, or None when there is none."""
    path = os.path.join(output_dir, RUN_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as file:
        return json.load(file)


def check_resumable(output_dir: str, run: dict[str, Any], hparams: HParams) -> None:
    """Refuses an output_dir whose checkpoints belong to another problem, model or shape.

    Args:
      output_dir: the training directory.
      run: what this training is: {"problem": ..., "model": ...}.
      hparams: the hparams it trains with.
    """
    if tf.train.latest_checkpoint(output_dir) is None:
        return
    previous = read_run(output_dir)
    if previous is None:
        raise UserError(
            f"output_dir {output_dir} holds checkpoints but no {RUN_FILE}, so they were "
            "not written by t2t-trainer; choose another --output_dir."
        )
    for key in ("problem", "model"):
        if previous.get(key) != run[key]:
            raise UserError(
                f"output_dir {output_dir} holds checkpoints of {key} {previous.get(key)!r}, "
                f"not {run[key]!r}; choose another --output_dir, or rerun with "
                f"--{key}={previous.get(key)} to resume that training."
            )
    with tf.io.gfile.GFile(os.path.join(output_dir, HPARAMS_FILE)) as file:
        saved = json.load(file)
    new = hparams.values()
    # vocab_size 0 takes the problem's: a change there shows when the weights load.
    changed = [
        name
        for name in getattr(type(hparams), "shape_fields", ())
        if name in saved and saved[name] != new.get(name) and new.get(name) != 0
    ]
    if changed:
        listing = ", ".join(f"{name} {saved[name]!r} -> {new[name]!r}" for name in changed)
        raise UserError(
            f"output_dir {output_dir} holds checkpoints of a model with another shape "
            f"({listing}); these hparams set the weights' shapes and cannot change on "
            "resume. Use the previous values or another --output_dir."
        )
    others = sorted(
        name for name in new if name in saved and saved[name] != new[name] and new[name] != 0
    )
    if others:
        logging.info("Resuming with changed hparams: %s.", ", ".join(others))


def write_run(
    output_dir: str, run: dict[str, Any], hparams: HParams, vocab_paths: dict[str, str]
) -> None:
    """Writes hparams.json and run.json, and copies the vocabulary files, into output_dir.

    Args:
      output_dir: the training directory (created if missing).
      run: {"problem", "model", ...}; "vocab" is added, mapping each side to
        its file name in output_dir ("bytes" needs no file).
      hparams: the hparams trained with.
      vocab_paths: side -> path of the vocabulary file, or "bytes".
    """
    vocab = {}
    for side, path in vocab_paths.items():
        if path == "bytes":
            vocab[side] = path
            continue
        name = os.path.basename(path)
        target = os.path.join(output_dir, name)
        if not os.path.exists(target):
            with open(path, "rb") as file:
                write_atomically(file.read(), target)
        vocab[side] = name
    write_atomically(hparams.to_json().encode(), os.path.join(output_dir, HPARAMS_FILE))
    text = json.dumps({**run, "vocab": vocab}, indent=2) + "\n"
    write_atomically(text.encode(), os.path.join(output_dir, RUN_FILE))
