"""Exporting a trained model as a CTranslate2 model directory, and reading one back.

The directory is what `ctranslate2.Translator` loads (model.bin, config.json,
the vocabulary JSON), plus what t2t-decoder needs to decode with it without
the training directory: the SentencePiece model(s) under the names run.json
gives them, and `t2t_keras.json` with the problem, the run files' contents
and the search defaults (beam size, alpha, extra length, ...).

The export is written into a hidden directory beside its destination and
renamed into place; an earlier export there is replaced only once the new
one is complete, and a directory that is not an export is never touched.
What an interrupted export left is removed by the next (`files.remove_abandoned`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

from t2t_keras.errors import UserError
from t2t_keras.files import (
    make_temporary_dir,
    naming_failed_writes,
    remove_abandoned,
    replace_directory,
)
from t2t_keras.models.transformer import Transformer
from t2t_keras.run.loading import TrainedModel
from t2t_keras.run.run_files import vocab_files
from t2t_keras.search.settings import SearchDefaults, SearchSettings

EXPORT_INFO = "t2t_keras.json"
FORMAT = "t2t_keras-ctranslate2"
# CTranslate2's weight types; "float32" keeps the trained weights as they are.
QUANTIZATIONS = (
    "float32",
    "int8",
    "int8_float32",
    "int8_float16",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
)
# What t2t_keras.json holds besides "format".
_INFO_KEYS = ("run", "hparams", "checkpoint", "max_length", "search_defaults")
INSTALL_HINT = "pip install 't2t_keras[ctranslate2]' (or pip install ctranslate2)"


def import_ctranslate2() -> Any:
    """The ctranslate2 module, or a UserError saying how to install it."""
    try:
        import ctranslate2
    except ImportError as error:
        raise UserError(
            f"CTranslate2 export and decoding need the ctranslate2 package, which is not "
            f"installed ({error}); install it with {INSTALL_HINT}."
        ) from None
    return ctranslate2


def check_quantization(quantization: str) -> None:
    """Refuses a weight type CTranslate2 does not have, listing those it has."""
    if quantization not in QUANTIZATIONS:
        raise UserError(
            f"unknown --quantization {quantization!r}; CTranslate2 stores weights as one of "
            f"{', '.join(QUANTIZATIONS)} (float32 keeps them as trained; int8 is the "
            "fastest on CPUs)."
        )


def export_ctranslate2(
    trained: TrainedModel,
    export_dir: str,
    settings: SearchSettings,
    quantization: str = "float32",
) -> str:
    """Writes the CTranslate2 model directory of a trained Transformer.

    Args:
      trained: the model with its weights, vocabularies and run files.
      export_dir: the model directory to write; an earlier export there is
        replaced once the new one is complete.
      settings: the search settings recorded for t2t-decoder (resolved:
        `DecodeHParams.resolve`); its beam_size, alpha and extra_length
        become the export's `search_defaults`.
      quantization: one of QUANTIZATIONS.

    Returns:
      export_dir, absolute.

    Raises:
      UserError: no ctranslate2 package, an unknown quantization, a model
        CTranslate2 cannot express, or an export_dir that is not an export.
    """
    from t2t_keras.export.ctranslate2_spec import check_supported

    check_quantization(quantization)
    import_ctranslate2()
    model = trained.model
    if not isinstance(model, Transformer):
        raise UserError(
            f"only the Transformer exports to CTranslate2, and {trained.run.get('model')!r} "
            f"is a {type(model).__name__}; export it as a SavedModel instead."
        )
    check_supported(model)
    export_dir = os.path.abspath(os.path.expanduser(export_dir))
    _check_replaceable(export_dir)
    remove_abandoned(export_dir)
    temporary_dir = make_temporary_dir(export_dir, "the export directory", "--export_dir")
    try:
        with naming_failed_writes(export_dir):
            _write_export(trained, temporary_dir, settings, quantization)
        replace_directory(temporary_dir, export_dir)
    finally:
        shutil.rmtree(temporary_dir, ignore_errors=True)
    return export_dir


def search_defaults(info: dict[str, Any]) -> SearchDefaults:
    """What unset search settings take when decoding with an export (its `read_info`)."""
    return SearchDefaults(**info["search_defaults"])


def read_info(model_dir: str) -> dict[str, Any]:
    """The t2t_keras.json of a CTranslate2 export, checked.

    Raises:
      UserError: no such directory, or one that t2t-exporter did not write.
    """
    model_dir = os.path.expanduser(model_dir)
    path = os.path.join(model_dir, EXPORT_INFO)
    hint = (
        "give a directory written by t2t-exporter --export_format=ctranslate2 (by default "
        "<output_dir>/ctranslate2)."
    )
    if not os.path.isdir(model_dir):
        raise UserError(f"the CTranslate2 model directory {model_dir} does not exist; {hint}")
    try:
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
    except FileNotFoundError:
        raise UserError(
            f"{model_dir} has no {EXPORT_INFO}, so it is not a t2t_keras CTranslate2 export "
            f"(a model converted by another tool lacks our vocabularies and settings); {hint}"
        ) from None
    except (OSError, ValueError) as error:
        raise UserError(f"{path} cannot be read ({error}); export the model again.") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise UserError(f"{path} is not a t2t_keras export description; {hint}")
    missing = [key for key in _INFO_KEYS if key not in info]
    if missing:
        raise UserError(
            f"{path} lacks {', '.join(missing)}, which t2t-exporter writes; export the model "
            "again with t2t-exporter --export_format=ctranslate2."
        )
    return info


def _write_export(
    trained: TrainedModel, model_dir: str, settings: SearchSettings, quantization: str
) -> None:
    """Writes the CTranslate2 model, the vocabularies and t2t_keras.json into model_dir."""
    from t2t_keras.export.ctranslate2_spec import model_spec

    model = trained.model
    spec = model_spec(model, trained.vocabs, model.hparams.max_length)
    spec.validate()
    try:
        spec.optimize(quantization=None if quantization == "float32" else quantization)
    except (RuntimeError, ValueError) as error:  # bfloat16 types need torch to convert.
        raise UserError(
            f"CTranslate2 cannot store the weights as {quantization}: {error}. Choose "
            "another --quantization (int8 and float32 need nothing more)."
        ) from None
    spec.save(model_dir)
    _copy_vocabularies(trained, model_dir)
    _write_info(trained, model.hparams.max_length, settings, quantization, model_dir)


def _check_replaceable(export_dir: str) -> None:
    """Refuses an export_dir that holds anything but an earlier export."""
    if not os.path.exists(export_dir):
        return
    if not os.path.isdir(export_dir):
        raise UserError(
            f"--export_dir {export_dir} is a file; give a directory path (the export is "
            "written there)."
        )
    if os.listdir(export_dir) and not os.path.isfile(os.path.join(export_dir, EXPORT_INFO)):
        raise UserError(
            f"--export_dir {export_dir} holds files that are not a t2t_keras CTranslate2 "
            "export, which would be lost; give a new or empty directory, or an earlier export."
        )


def _copy_vocabularies(trained: TrainedModel, model_dir: str) -> None:
    for name in vocab_files(trained.run):
        shutil.copyfile(os.path.join(trained.run_dir, name), os.path.join(model_dir, name))


def _write_info(
    trained: TrainedModel,
    max_length: int,
    settings: SearchSettings,
    quantization: str,
    model_dir: str,
) -> None:
    info = {
        "format": FORMAT,
        "run": trained.run,
        "hparams": trained.hparams.values(),
        "checkpoint": os.path.abspath(trained.checkpoint),
        "quantization": quantization,
        "max_length": max_length,
        "search_defaults": dataclasses.asdict(SearchDefaults.of(settings)),
        "search_settings": dataclasses.asdict(settings),
    }
    with open(os.path.join(model_dir, EXPORT_INFO), "w", encoding="utf-8") as file:
        json.dump(info, file, indent=2, sort_keys=True)
        file.write("\n")
