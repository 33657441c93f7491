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
    run = read_json(path)
    if not isinstance(run.get("problem"), str) or not isinstance(run.get("model"), str):
        raise _damaged(path, "it names no problem and model")
    return run


def read_json(path: str) -> dict[str, Any]:
    """A JSON object file that t2t-trainer wrote; a clear error naming it if it is damaged."""
    try:
        with tf.io.gfile.GFile(path, "rb") as file:
            value = json.loads(file.read().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _damaged(path, f"it is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise _damaged(path, "it holds no JSON object")
    return value


def _damaged(path: str, why: str) -> UserError:
    return UserError(
        f"{path} cannot be read: {why}. t2t-trainer writes it into its --output_dir and it "
        "must not be edited; restore it from a backup, or delete it and rerun t2t-trainer "
        "with the same --problem, --hparams_set and --hparams, which writes it anew."
    )


def check_resumable(output_dir: str, run: dict[str, Any], hparams: HParams) -> None:
    """Refuses an output_dir whose checkpoints belong to another problem, model or shape.

    Args:
      output_dir: the training directory.
      run: what this training is: {"problem": ..., "model": ...}.
      hparams: the hparams it trains with.
    """
    if not _has_checkpoints(output_dir):
        return
    previous = read_run(output_dir)
    if previous is None and not tf.io.gfile.exists(os.path.join(output_dir, HPARAMS_FILE)):
        raise UserError(
            f"output_dir {output_dir} holds checkpoints but no {RUN_FILE} or {HPARAMS_FILE}, "
            "so they were not written by t2t-trainer; choose another --output_dir."
        )
    if previous is None:
        logging.warning("%s has no %s; it is written anew.", output_dir, RUN_FILE)
        previous = run
    for key in ("problem", "model"):
        if previous.get(key) != run[key]:
            raise UserError(
                f"output_dir {output_dir} holds checkpoints of {key} {previous.get(key)!r}, "
                f"not {run[key]!r}; choose another --output_dir, or rerun with "
                f"--{key}={previous.get(key)} to resume that training."
            )
    hparams_path = os.path.join(output_dir, HPARAMS_FILE)
    saved = read_json(hparams_path) if tf.io.gfile.exists(hparams_path) else {}
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


def trained_hparams(output_dir: str) -> dict[str, Any]:
    """hparams.json of the checkpoints in output_dir; {} when there are none to resume."""
    hparams_path = os.path.join(output_dir, HPARAMS_FILE)
    if not _has_checkpoints(output_dir) or not tf.io.gfile.exists(hparams_path):
        return {}
    return read_json(hparams_path)


def check_vocabularies(output_dir: str, vocab_paths: dict[str, str], hparams: HParams) -> None:
    """On resume, refuses vocabularies other than those the checkpoints were trained with.

    Args:
      output_dir: the training directory.
      vocab_paths: side -> the data_dir's vocabulary file, or "bytes".
      hparams: the hparams this run would train with, their sizes taken from the vocabularies.
    """
    if not _has_checkpoints(output_dir):
        return
    saved, new = trained_hparams(output_dir), hparams.values()
    # target_vocab_size is absent from hparams.json written before it existed: 0, its default.
    changed = [
        name
        for name in ("vocab_size", "target_vocab_size")
        if saved and name in new and saved.get(name, 0) != new[name]
    ]
    if changed:
        now = ", ".join(f"{name}={new[name]}" for name in changed)
        then = ", ".join(f"{name}={saved.get(name, 0)}" for name in changed)
        raise UserError(
            f"the vocabularies in data_dir give the model {now}, but the checkpoints in "
            f"{output_dir} were trained with {then} ({output_dir}/{HPARAMS_FILE}): the data "
            "was regenerated with another vocabulary. Point --data_dir at the data trained on, "
            "or choose another --output_dir to train afresh."
        )
    recorded = (read_run(output_dir) or {}).get("vocab", {})
    for side, path in vocab_paths.items():
        name = recorded.get(side)
        copy = os.path.join(output_dir, name) if name and name != "bytes" else None
        if path == "bytes" or copy is None or not tf.io.gfile.exists(copy):
            continue
        with open(path, "rb") as ours, tf.io.gfile.GFile(copy, "rb") as trained:
            if ours.read() != trained.read():
                raise UserError(
                    f"the {side} vocabulary {path} differs from {copy}, the one the checkpoints "
                    f"in {output_dir} were trained with, so every id would mean another piece. "
                    "Point --data_dir at the data trained on, or choose another --output_dir "
                    "to train afresh."
                )


def _has_checkpoints(output_dir: str) -> bool:
    return bool(tf.io.gfile.glob(os.path.join(output_dir, "ckpt-*.index")))


def write_run(
    output_dir: str,
    run: dict[str, Any],
    hparams: HParams,
    vocab_paths: dict[str, str],
    vocab_sizes: dict[str, int] | None = None,
) -> None:
    """Writes hparams.json and run.json, and copies the vocabulary files, into output_dir.

    Args:
      output_dir: the training directory (created if missing).
      run: {"problem", "model", ...}; "vocab" is added, mapping each side to
        its file name in output_dir ("bytes" needs no file).
      hparams: the hparams trained with.
      vocab_paths: side -> path of the vocabulary file, or "bytes".
      vocab_sizes: side -> the vocabulary's number of ids, recorded so that a
        vocabulary replaced later is noticed.
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
    sizes = {"vocab_sizes": vocab_sizes} if vocab_sizes else {}
    text = json.dumps({**run, "vocab": vocab, **sizes}, indent=2) + "\n"
    write_atomically(text.encode(), os.path.join(output_dir, RUN_FILE))
