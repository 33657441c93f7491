"""Flags and error handling shared by the t2t-* binaries."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from typing import NoReturn

from absl import app, flags

from t2t_keras import catalog, registry
from t2t_keras.data import Problem
from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams
from t2t_keras.models import TransformerHParams

FLAGS = flags.FLAGS
_HELP_FLAGS = {"?", "help", "helpfull", "helpshort", "helpxml"}
_LISTED = " --registry_help lists them."

_HPARAMS_HELP = (
    "Overrides of the hparams set's values: comma-separated name=value, e.g. "
    "'num_heads=4,dropout=0.2'. Booleans are true/false, lists [1,2]. "
    "The fields (Transformer defaults shown; --hparams_help shows a set's values):\n"
)


def define_flags(with_model: bool) -> None:
    """The flags every binary has; with_model adds --model and the hparams flags."""
    flags.DEFINE_string(
        "t2t_usr_dir",
        None,
        "Directory of a Python package (with __init__.py) whose modules register "
        "your own problems, hparams sets and models.",
    )
    flags.DEFINE_bool(
        "registry_help", False, "Print every registered problem, model and hparams set, then exit."
    )
    flags.DEFINE_string("problem", None, "Name of a registered problem (see --registry_help).")
    if not with_model:
        return
    flags.DEFINE_string("model", "transformer", "Name of a registered model.")
    flags.DEFINE_string(
        "hparams_set", None, "Name of a registered hparams set, e.g. transformer_base."
    )
    flags.DEFINE_string("hparams", "", _HPARAMS_HELP + TransformerHParams.help_text())
    flags.DEFINE_bool(
        "hparams_help",
        False,
        "Print every hparams field with its meaning and value (those of --hparams_set "
        "with --hparams applied, or the Transformer defaults), then exit.",
    )


def define_data_flags() -> None:
    """--data_dir and --tmp_dir, for the binaries that generate or read a problem's data."""
    flags.DEFINE_string(
        "data_dir", None, "Directory of the problem's vocabulary and TFRecord shards."
    )
    flags.DEFINE_string(
        "tmp_dir",
        os.path.join(tempfile.gettempdir(), "t2t_datagen"),
        "Directory for downloads and raw corpora; files already there are used as they are.",
    )


def define_checkpoint_flags() -> None:
    """--output_dir and --checkpoint_path, for the binaries that use a trained model."""
    flags.DEFINE_string(
        "output_dir", None, "Training directory t2t-trainer wrote (checkpoints and run files)."
    )
    flags.DEFINE_string(
        "checkpoint_path",
        None,
        "A checkpoint prefix (TRAIN/ckpt-1000) or a directory (its newest); default: the "
        "newest in --output_dir. Without --output_dir, the run files beside it are used.",
    )


def generate_data(problem: Problem) -> None:
    """Writes the problem's vocabulary and shards into --data_dir (what is missing only)."""
    data_dir = required("data_dir", "the directory to write the vocabulary and shards to")
    problem.generate_data(os.path.expanduser(data_dir), os.path.expanduser(FLAGS.tmp_dir))


def run(main: Callable[[], int | None]) -> NoReturn:
    """Runs `main` as an absl program; user errors exit with status 2."""
    _show_in_help(main.__module__)

    def absl_main(argv: list[str]) -> int | None:
        if len(argv) > 1:
            fail(f"unexpected arguments {' '.join(argv[1:])!r}; every option is a --flag.")
        try:
            return main()
        except UserError as error:
            fail(str(error))

    app.run(absl_main, flags_parser=_parse_flags)


def _show_in_help(binary_module: str) -> None:
    """Makes --help print the binary's docstring and its flags.

    absl's --help shows the flags of the module named sys.argv[0] and the
    docstring of __main__, which for an installed console script are neither
    the binary's module nor this one.
    """
    sys.modules["__main__"].__doc__ = sys.modules[binary_module].__doc__
    for module in (binary_module, __name__):
        for flag in FLAGS.get_flags_for_module(module):
            FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def _parse_flags(argv: list[str]) -> list[str]:
    try:
        return FLAGS(argv)
    except SystemExit as exit_request:
        # absl exits with 1 after printing help; asking for help is no error.
        asked = {arg.lstrip("-").split("=")[0] for arg in argv[1:]}
        if exit_request.code == 1 and asked & _HELP_FLAGS:
            sys.exit(0)
        raise
    except flags.Error as error:
        message = " ".join(str(arg) for arg in error.args).replace(" ?", "?").rstrip()
        if not message.endswith(("?", ".")):
            message += "."
        fail(f"{message} Run {_program()} --helpfull to see every flag.")


def fail(message: str) -> NoReturn:
    """Prints `message` as the program's error and exits with status 2."""
    paragraph = " ".join(message.split())  # One paragraph, whatever the message held.
    print(f"{_program()}: error: {paragraph}", file=sys.stderr)
    sys.exit(2)


def _program() -> str:
    return os.path.basename(sys.argv[0]) or "t2t"


def start() -> bool:
    """Loads the catalog and --t2t_usr_dir; answers --registry_help or --hparams_help if asked.

    Returns:
      True when a help flag was answered and the program should exit.
    """
    catalog.load(usr_dir=FLAGS.t2t_usr_dir or None)
    if FLAGS.registry_help:
        print(registry.help_string(), end="")
        return True
    if "hparams_help" in FLAGS and FLAGS.hparams_help:
        print_hparams_help()
        return True
    return False


def unavailable(what: str) -> NoReturn:
    """Exits with status 1: the program cannot do `what` in this version."""
    print(f"{_program()}: {what} is not available in this version.", file=sys.stderr)
    sys.exit(1)


def required(flag_name: str, what: str, hint: str = "") -> str:
    """The flag's value, or a clear error naming what it must hold."""
    value = FLAGS[flag_name].value
    if not value:
        fail(f"--{flag_name} is required: {what}.{hint}")
    return value


def resolve_hparams() -> HParams:
    """--hparams_set with --hparams applied."""
    hparams_set = required("hparams_set", "the name of a registered hparams set", _LISTED)
    return registry.hparams(hparams_set).override(FLAGS.hparams)


def resolve_problem() -> Problem:
    return registry.problem(required("problem", "the name of a registered problem", _LISTED))


def print_hparams_help() -> None:
    """The fields of --hparams_set (with --hparams), or the Transformer defaults."""
    if FLAGS.hparams_set:
        title, hparams = FLAGS.hparams_set, resolve_hparams()
    else:
        title, hparams = "defaults", TransformerHParams().override(FLAGS.hparams)
    print(f"{title} ({type(hparams).__name__}):\n{hparams.describe()}")
