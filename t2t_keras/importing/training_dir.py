"""A foreign model written as an ordinary training directory, all or nothing.

The directory is written aside (a hidden temporary directory beside it),
then renamed into place: a failed or killed import leaves nothing
half-written, and a directory that already holds anything is refused, so
nothing a user has is replaced.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np
import tensorflow as tf

from t2t_keras.errors import UserError
from t2t_keras.files import make_temporary_dir, naming_failed_writes, replace_directory
from t2t_keras.importing.marian import marian_hparams, our_vocabularies, read_marian
from t2t_keras.importing.marian_weights import our_weights
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.run import run_files
from t2t_keras.run.weights import build_model, make_checkpoint

MODEL_NAME = "transformer"
# The problem an imported run names: your own pairs, a vocabulary a side, as a
# Marian model has (source.spm, target.spm): fine-tuning data is generated with it.
PROBLEM = "text2text_tmpdir_two_vocabs"
# The rewritten SentencePiece models' names in the training directory.
VOCAB_FILES = {"inputs": "vocab.source.model", "targets": "vocab.target.model"}


def import_marian(model_dir: str, output_dir: str, decoder_start: str = "pad") -> str:
    """Writes the Marian model in model_dir as a training directory at output_dir.

    decoder_start: `marian_hparams`'.

    Returns:
      The checkpoint prefix written.

    Raises:
      UserError: output_dir holds something, or the model cannot be imported
        exactly (`UnsupportedModel`, naming what and why).
    """
    output_dir = os.path.abspath(os.path.expanduser(output_dir))
    _check_free(output_dir)
    marian = read_marian(model_dir)
    hparams = marian_hparams(marian, decoder_start)
    vocabularies = our_vocabularies(marian)
    model = build_model(MODEL_NAME, hparams, use_xla=False)
    _assign(model, our_weights(marian, hparams, MODEL_NAME), model_dir)
    record = {"from": "marian", "model_dir": os.path.abspath(model_dir)}
    return _write(model, hparams, vocabularies, output_dir, record)


def _check_free(output_dir: str) -> None:
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
        holds = "a run" if run_files.read_run(output_dir) else "files"
        raise UserError(
            f"--output_dir={output_dir} already holds {holds}; t2t-importer writes a new "
            "training directory and never replaces or mixes with one. Give a new or empty "
            "directory."
        )


def _assign(model: Any, weights: dict[str, np.ndarray], model_dir: str) -> None:
    """Sets every model variable from `weights`; refuses a missing or misshapen one."""
    variables = {v.path: v for v in model.variables if v.name != "seed_generator_state"}
    missing = sorted(set(variables) - set(weights))
    wrong = [
        f"{path} {weights[path].shape} for {tuple(variables[path].shape)}"
        for path in sorted(set(variables) & set(weights))
        if tuple(weights[path].shape) != tuple(variables[path].shape)
    ]
    if missing or wrong:
        raise UserError(
            f"the weights in {model_dir} do not fit the model its config.json describes "
            f"({'missing ' + ', '.join(missing[:3]) if missing else ''}{'; '.join(wrong[:3])}): "
            "the weights file and config.json are not of one model."
        )
    for path, variable in variables.items():
        variable.assign(weights[path].astype(np.float32))


def _write(
    model: Any,
    hparams: TransformerHParams,
    vocabularies: dict[str, bytes],
    output_dir: str,
    record: dict[str, Any],
) -> str:
    """Writes the checkpoint, run files and vocabularies aside, then renames them into place."""
    staging = make_temporary_dir(output_dir, "the training directory", "--output_dir")
    try:
        with naming_failed_writes(output_dir):
            paths = {}
            for side, proto in vocabularies.items():
                paths[side] = os.path.join(staging, VOCAB_FILES[side])
                with open(paths[side], "wb") as file:
                    file.write(proto)
            sizes = {"inputs": hparams.vocab_size, "targets": hparams.targets_vocab_size()}
            run = {"problem": PROBLEM, "model": MODEL_NAME, "imported": record}
            run_files.write_run(staging, run, hparams, paths, sizes)
            manager = tf.train.CheckpointManager(
                make_checkpoint(model), staging, max_to_keep=1, checkpoint_name="ckpt"
            )
            written = manager.save(checkpoint_number=0)
        if os.path.isdir(output_dir):
            os.rmdir(output_dir)  # Empty (`_check_free`).
        replace_directory(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(output_dir, os.path.basename(written))
