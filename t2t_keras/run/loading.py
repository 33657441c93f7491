"""Loading a trained model for decoding, averaging or export: from output_dir alone.

t2t-trainer leaves in output_dir what the model needs besides its weights:
hparams.json, run.json (problem, model, hparams set, data_dir, vocabulary
files) and the vocabulary files themselves. A checkpoint is found either as
the newest in a directory or as a prefix such as `TRAIN/ckpt-1000`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.data.vocab import ByteVocabulary, SentencePieceVocabulary, Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams, HParamsError
from t2t_keras.models.ensemble import Ensemble
from t2t_keras.run import intact, run_files
from t2t_keras.run.weights import build_model, restore_model


@dataclasses.dataclass
class TrainedModel:
    """A model with its trained weights and everything needed to feed it text.

    Attributes:
      model: the built model, weights restored.
      hparams: the hparams it was trained with (from hparams.json).
      vocabs: {"inputs": Vocabulary, "targets": Vocabulary}.
      run: run.json: {"problem", "model", "data_dir", "vocab", "hparams_set"?}.
      checkpoint: the checkpoint prefix the weights came from.
      run_dir: the directory run.json and hparams.json were read from.
    """

    model: keras.Model
    hparams: HParams
    vocabs: dict[str, Vocabulary]
    run: dict[str, Any]
    checkpoint: str
    run_dir: str

    @property
    def hparams_set(self) -> str | None:
        return self.run.get("hparams_set")


def find_checkpoint(path: str) -> str:
    """The checkpoint prefix `path` names: itself, or the newest in a directory.

    Raises:
      UserError: nothing at path, or a directory without checkpoints.
    """
    path = os.path.expanduser(path)
    if tf.io.gfile.isdir(path):
        prefixes = intact.checkpoint_prefixes(path)
        if not prefixes:
            raise UserError(
                f"directory {path} holds no checkpoint (no 'checkpoint' state file with "
                "ckpt-N files); give the --output_dir t2t-trainer wrote, or a checkpoint "
                "prefix such as TRAIN/ckpt-1000."
            )
        return prefixes[0]
    if tf.io.gfile.exists(path + ".index"):
        return path
    hint = " (give the prefix, without .index)" if path.endswith(".index") else ""
    raise UserError(
        f"checkpoint {path} does not exist{hint}; give a directory holding checkpoints "
        "or a checkpoint prefix such as TRAIN/ckpt-1000 (the files ckpt-1000.index and "
        "ckpt-1000.data-*)."
    )


def read_run_files(directory: str) -> tuple[dict[str, Any], HParams]:
    """run.json and hparams.json of a training directory, the hparams in their class."""
    run = run_files.read_run(directory)
    hparams_path = os.path.join(directory, run_files.HPARAMS_FILE)
    if run is None or not tf.io.gfile.exists(hparams_path):
        raise UserError(
            f"{directory} holds no {run_files.RUN_FILE} and {run_files.HPARAMS_FILE}, which "
            "t2t-trainer writes into its --output_dir; point --output_dir at a training "
            "directory (--checkpoint_path alone works when the checkpoint lies in one)."
        )
    saved = run_files.read_json(hparams_path)
    try:
        hparams = model_hparams_class(run["model"]).from_json(json.dumps(saved))
    except HParamsError as error:
        raise UserError(
            f"{hparams_path} does not describe a {run['model']} model: {error} t2t-trainer "
            "writes it into its --output_dir; restore it from a backup, or rerun t2t-trainer "
            "with the same --hparams_set and --hparams to write it anew."
        ) from None
    return run, hparams


def model_hparams_class(model_name: str) -> type[HParams]:
    """The HParams class a registered model's hparams.json holds."""
    hparams_class = getattr(registry.model(model_name), "hparams_class", None)
    if hparams_class is None:
        raise UserError(
            f"model {model_name!r} has no hparams_class attribute, so its "
            f"{run_files.HPARAMS_FILE} cannot be read; give the model class one."
        )
    return hparams_class


def load_vocabs(directory: str, run: dict[str, Any]) -> dict[str, Vocabulary]:
    """The vocabularies run.json names, from the files copied into directory."""
    vocabs = {}
    for side, name in run.get("vocab", {}).items():
        if name == "bytes":
            vocabs[side] = ByteVocabulary()
            continue
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise UserError(
                f"the vocabulary file {path} named in {run_files.RUN_FILE} is missing; copy it "
                "back from the problem's data_dir."
            )
        vocabs[side] = SentencePieceVocabulary.load(path)
    missing = {"inputs", "targets"} - set(vocabs)
    if missing:
        raise UserError(
            f"{os.path.join(directory, run_files.RUN_FILE)} names no vocabulary for "
            f"{', '.join(sorted(missing))}; it was not written by this version of t2t-trainer."
        )
    return vocabs


def load_trained(
    output_dir: str | None = None,
    checkpoint_path: str | None = None,
    hparams_set: str | None = None,
    use_xla: bool = True,
) -> TrainedModel:
    """Builds the model a training directory describes and restores a checkpoint into it.

    Args:
      output_dir: the training directory (run.json, hparams.json, vocabularies);
        its newest checkpoint unless checkpoint_path is given.
      checkpoint_path: a checkpoint prefix or a directory (its newest); without
        output_dir, the run files are read from the checkpoint's directory.
      hparams_set: if given, the hparams set the caller expects; a model trained
        with another one is refused, naming both.
      use_xla: XLA-compile the model's attention cores.

    Raises:
      UserError: a missing path, run files or vocabulary, another hparams set,
        or a checkpoint whose weights do not fit the model.
    """
    given = checkpoint_path or output_dir
    if not given:
        raise UserError(
            "no model to load: give --output_dir (a t2t-trainer training directory) or "
            "--checkpoint_path (a checkpoint prefix or a directory of checkpoints)."
        )
    checkpoint = find_checkpoint(given)
    directory = os.path.expanduser(output_dir) if output_dir else os.path.dirname(checkpoint)
    run, hparams = read_run_files(directory)
    _check_hparams_set(run, hparams_set, f"{directory}/{run_files.RUN_FILE}")
    checkpoint_dir = os.path.dirname(checkpoint)
    if output_dir and os.path.abspath(checkpoint_dir) != os.path.abspath(directory):
        other = run_files.read_run(checkpoint_dir)
        if other is not None:
            _check_hparams_set(other, run.get("hparams_set"), f"{checkpoint_dir}/run.json", run)
    model = build_model(run["model"], hparams, use_xla=use_xla)
    try:
        checkpoint = _restore(model, os.path.expanduser(given), checkpoint)
    except intact.DamagedCheckpointError:
        raise
    except UserError as error:
        raise UserError(
            f"{error} The model was built from {directory}/{run_files.HPARAMS_FILE} "
            f"(hparams set {run.get('hparams_set', 'unrecorded')}); decode a checkpoint "
            "with the run files of the training that wrote it."
        ) from None
    vocabs = load_vocabs(directory, run)
    _check_vocab_sizes(vocabs, run, hparams, directory)
    return TrainedModel(model, hparams, vocabs, run, checkpoint, directory)


def load_ensemble(
    output_dirs: Sequence[str], hparams_set: str | None = None, use_xla: bool = True
) -> TrainedModel:
    """Several training directories (or averaged ones) decoding as one `Ensemble`.

    The result is the first member's, but for the model and the checkpoint
    (the members' checkpoints, comma-separated).

    Raises:
      UserError: as `load_trained` for each; members whose vocabularies differ.
    """
    members = [load_trained(directory, None, hparams_set, use_xla) for directory in output_dirs]
    first = members[0]
    for other in members[1:]:
        for side in ("inputs", "targets"):
            if _vocab_bytes(first.vocabs[side]) != _vocab_bytes(other.vocabs[side]):
                raise UserError(
                    f"the models of an ensemble must share their vocabularies, but the {side} "
                    f"vocabulary of {other.run_dir} ({other.run['vocab'][side]}) differs from "
                    f"that of {first.run_dir} ({first.run['vocab'][side]}); ensemble models "
                    "trained on data of one vocabulary (t2t-datagen --vocab_from shares one)."
                )
    model = Ensemble([member.model for member in members])
    checkpoints = ",".join(member.checkpoint for member in members)
    return dataclasses.replace(first, model=model, hparams=model.hparams, checkpoint=checkpoints)


def _vocab_bytes(vocab: Vocabulary) -> bytes:
    path = getattr(vocab, "model_path", None)
    if path is None:
        return type(vocab).__name__.encode()
    with open(path, "rb") as file:
        return file.read()


def _check_vocab_sizes(
    vocabs: dict[str, Vocabulary], run: dict[str, Any], hparams: HParams, directory: str
) -> None:
    """Each vocabulary has the size it was trained with, and no more ids than its side's."""
    # Another model class may have no vocabulary sizes: nothing to check against then.
    model_sizes = {
        "inputs": getattr(hparams, "vocab_size", 0),
        "targets": getattr(hparams, "targets_vocab_size", lambda: 0)(),
    }
    recorded = run.get("vocab_sizes", {})
    for side, vocab in vocabs.items():
        expected = recorded.get(side)
        model_size = model_sizes.get(side, 0)
        too_many = model_size and vocab.vocab_size > model_size
        if too_many or (expected and vocab.vocab_size != expected):
            trained = f"{expected} ids ({run_files.RUN_FILE})" if expected else "fewer"
            raise UserError(
                f"the {side} vocabulary {run['vocab'][side]} in {directory} has "
                f"{vocab.vocab_size} ids, but the model was trained with {trained} and has "
                f"{model_size} {side} ids ({run_files.HPARAMS_FILE}): it is not the vocabulary "
                "trained with. Copy that one back from the problem's data_dir."
            )


def _restore(model: keras.Model, given: str, checkpoint: str) -> str:
    """Restores the checkpoint named, or a directory's newest that reads whole; returns it."""
    if tf.io.gfile.isdir(given):
        restored, _ = intact.restore_newest(
            given, lambda prefix: restore_model(model, prefix), using="decoding with"
        )
        assert restored is not None  # find_checkpoint found one.
        return restored
    try:
        restore_model(model, checkpoint)
    except Exception:
        damage = intact.damage(checkpoint)
        if damage is None:
            raise
        raise intact.DamagedCheckpointError(
            f"checkpoint {checkpoint} cannot be read ({damage}): its files are damaged. Give "
            "another checkpoint, or its directory to take the newest that reads completely."
        ) from None
    return checkpoint


def _check_hparams_set(
    run: dict[str, Any],
    expected: str | None,
    where: str,
    expected_run: dict[str, Any] | None = None,
) -> None:
    recorded = run.get("hparams_set")
    if expected and recorded and expected != recorded:
        if expected_run:
            source, remedy = (
                "the --output_dir's run.json",
                f"give the --output_dir of the training that wrote it ({os.path.dirname(where)})",
            )
        else:
            source, remedy = "--hparams_set", f"drop --hparams_set or use {recorded}"
        raise UserError(
            f"the checkpoint was trained with hparams set {recorded!r} ({where}), but "
            f"{source} says {expected!r}; a model's weights only fit the hparams they "
            f"were trained with: {remedy}."
        )
