"""Flags and error handling shared by the t2t-* binaries.

Nothing here imports TensorFlow: `--help` and flag errors answer at once,
and TensorFlow is imported (quietly, see tensorflow_logs) when work starts.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from absl import app, flags, logging

from t2t_keras import catalog, modes, registry
from t2t_keras.bin import tensor2tensor_flags, tensorflow_logs
from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.termination import Restartable

if TYPE_CHECKING:
    from t2t_keras.data import Problem

FLAGS = flags.FLAGS
_HELP_FLAGS = {"?", "help", "helpfull", "helpshort", "helpxml"}
_LISTED = " --registry_help lists them."

_HPARAMS_HELP = (
    "Overrides of the hparams set's values: comma-separated name=value, e.g. "
    "'num_heads=4,dropout=0.2'. Booleans are true/false, lists [1,2]. "
    "The fields (Transformer defaults shown; --hparams_help shows a set's values):\n"
)

# A write that found no room: a full disk, a full quota, the file-size limit (ulimit -f).
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def define_registry_flags() -> None:
    """--t2t_usr_dir and --registry_help, which every binary that reads the registry has."""
    flags.DEFINE_string(
        "t2t_usr_dir",
        None,
        "Directory of a Python package (with __init__.py) whose modules register "
        "your own problems, hparams sets and models.",
    )
    flags.DEFINE_bool(
        "registry_help", False, "Print every registered problem, model and hparams set, then exit."
    )


def define_problem_flag() -> None:
    """--problem, for the binaries that generate or train on a problem's data."""
    flags.DEFINE_string("problem", None, "Name of a registered problem (see --registry_help).")


def define_model_flags() -> None:
    """--model, --hparams_set, --hparams and --hparams_help, for training."""
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


def define_source_flags() -> None:
    """--data_source and --tfds_data_dir, for the binaries that generate data."""
    flags.DEFINE_enum(
        "data_source",
        "auto",
        ("auto", "local", "tfds", "archives"),
        "Where a translation problem with several sources (the WMT ones) reads its corpus. "
        "auto: plain text in --tmp_dir if its train files are there, else the archives if "
        "any is in --tmp_dir, else tensorflow-datasets; a data_dir keeps to the source "
        "that built it.",
    )
    flags.DEFINE_string(
        "tfds_data_dir",
        None,
        "tensorflow-datasets' data directory for --data_source=tfds (its download and "
        "cache); default: TFDS's own ($TFDS_DATA_DIR or ~/tensorflow_datasets).",
    )


def define_xla_flag(default: str) -> None:
    """--xla, the same values and meaning in every binary that runs a model."""
    flags.DEFINE_enum("xla", default, modes.XLA_MODES, modes.XLA_HELP)


def xla() -> modes.Xla:
    """--xla, and what it compiles."""
    return modes.Xla(FLAGS.xla)


def generate_data(problem: Problem) -> None:
    """Writes the problem's vocabulary and shards into --data_dir (what is missing only)."""
    data_dir = required("data_dir", "the directory to write the vocabulary and shards to")
    _use_source(problem)
    problem.generate_data(os.path.expanduser(data_dir), os.path.expanduser(FLAGS.tmp_dir))


def _use_source(problem: Problem) -> None:
    """Gives --data_source and --tfds_data_dir to a problem with several sources."""
    from t2t_keras.data.translate_problem import AUTO, TranslateProblem

    tfds_data_dir = FLAGS.tfds_data_dir and os.path.expanduser(FLAGS.tfds_data_dir)
    if isinstance(problem, TranslateProblem):
        problem.use_source(FLAGS.data_source, tfds_data_dir)
    elif FLAGS.data_source != AUTO or tfds_data_dir:
        fail(
            f"--data_source and --tfds_data_dir choose among the sources of a translation "
            f"problem that has several (the WMT ones); problem {problem.name!r} reads one."
        )


def run(main: Callable[[], int | None], uses_tensorflow: bool = True) -> NoReturn:
    """Runs `main` as an absl program; user errors exit with status 2.

    A trainer stopped by a termination signal or a lost worker prints its
    message and exits with the status that says "restart me".

    TensorFlow is imported (quietly) before `main` unless it does not use it.
    """
    _show_in_help(main.__module__)

    def absl_main(argv: list[str]) -> int | None:
        if len(argv) > 1:
            fail(f"unexpected arguments {' '.join(argv[1:])!r}; every option is a --flag.")
        if uses_tensorflow:
            tensorflow_logs.import_tensorflow(verbose=FLAGS.verbosity > 0)
        try:
            return main()
        except UserError as error:
            fail(str(error))
        except Restartable as stop:
            _restartable_exit(stop)
        except Exception as error:
            message = no_room_message(error)
            if message is None:
                raise
            fail(message)

    app.run(absl_main, flags_parser=_parse_flags)


def _restartable_exit(stop: Restartable) -> NoReturn:
    print(f"{_program()}: {' '.join(stop.message.split())}", file=sys.stderr)
    if stop.hard_exit:
        logging.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(stop.exit_code)
    sys.exit(stop.exit_code)


def no_room_message(error: BaseException) -> str | None:
    """The error to print for a write that found the disk full, else None.

    Python reports it as an OSError (ENOSPC, EDQUOT or EFBIG, the last when
    the file-size limit is reached); TensorFlow's own writers (checkpoints,
    SavedModels, TFRecords) as a tf.errors.OpError whose message ends in the
    same system message. The writers replace nothing until their output is
    complete, so what was written before is kept.
    """
    path, reason = _no_room(error)
    if reason is None:
        return None
    return (
        f"writing {path or 'the output'} failed: {reason}. The disk, your disk quota or the "
        "file-size limit (ulimit -f) has no room for it. Nothing finished before was "
        "replaced or lost; free some space (or write elsewhere) and run the same command again."
    )


def _no_room(error: BaseException | None) -> tuple[str | None, str | None]:
    """(the path written, the system's message), for the error or one it arose from."""
    tensorflow = sys.modules.get("tensorflow")  # Loaded if the error can be one of its.
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _NO_ROOM:
            return error.filename, error.strerror
        if tensorflow is not None and isinstance(error, tensorflow.errors.OpError):
            for reason in map(os.strerror, _NO_ROOM):
                found = re.search(rf"(\S+); {reason}", error.message)
                if found or reason in error.message:
                    return (found.group(1) if found else None), reason
        error = error.__cause__ or error.__context__
    return None, None


def _show_in_help(binary_module: str) -> None:
    """Makes --help print the binary's docstring and its flags.

    absl's --help shows the flags of the module named sys.argv[0] and the
    docstring of __main__, which for an installed console script are neither
    the binary's module nor the modules defining its flags.
    """
    sys.modules["__main__"].__doc__ = sys.modules[binary_module].__doc__
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        if module == binary_module or module.startswith(f"{__package__}."):
            for flag in module_flags:
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
        hint = tensor2tensor_flags.hint(getattr(error, "flagname", ""))
        fail(f"{message} {hint or ''} Run {_program()} --helpfull to see every flag.")


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
