"""The flags the t2t-* binaries share, in groups, and what they resolve to.

Each binary defines the groups it takes (registry, problem, model, data,
data source, --xla) and reads them through the functions here. Nothing here
imports TensorFlow: `--help` and flag errors answer at once.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import types
from typing import TYPE_CHECKING

from absl import flags

from t2t_keras import catalog, modes, registry
from t2t_keras.bin.program import fail
from t2t_keras.hparam import HParams
from t2t_keras.models.transformer_hparams import TransformerHParams

if TYPE_CHECKING:
    from t2t_keras.data import Problem

FLAGS = flags.FLAGS
_LISTED = " --registry_help lists them."

_HPARAMS_HELP = (
    "Overrides of the hparams set's values: comma-separated name=value, e.g. "
    "'num_heads=4,dropout=0.2'. Booleans are true/false, lists [1,2]. "
    "The fields (Transformer defaults shown; --hparams_help shows a set's values):\n"
)


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
    """--data_source, --tfds_data_dir and --vocab_from, for the binaries that generate data."""
    flags.DEFINE_string(
        "vocab_from",
        None,
        "Encode the data with the vocabulary of this trained run (its --output_dir, averaged "
        "directory or a checkpoint prefix) instead of training one, so that the run can be "
        "fine-tuned on it (t2t-trainer --warm_start_from).",
    )
    flags.DEFINE_enum(
        "data_source",
        modes.DATA_SOURCE_AUTO,
        (modes.DATA_SOURCE_AUTO, *modes.DATA_SOURCES),
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


def define_xla_cache_flag() -> None:
    """--xla_cache_dir: where compiled searches are kept between runs."""
    flags.DEFINE_string(
        "xla_cache_dir",
        None,
        "Where XLA's compiled searches are kept between runs (TensorFlow's persistent "
        "compilation cache), so a later run of the same model and settings skips compiling; "
        "default $XDG_CACHE_HOME/t2t_keras/xla or ~/.cache/t2t_keras/xla; empty: keep none. "
        "A cache directory set in TF_XLA_FLAGS wins.",
    )


def keep_compilations() -> None:
    """Applies --xla_cache_dir: `program.run(before_devices=keep_compilations)`."""
    from t2t_keras.search import compilation_cache

    directory = FLAGS.xla_cache_dir
    if directory is None:
        directory = compilation_cache.default_directory()
    compilation_cache.keep_compilations(directory)


def xla() -> modes.Xla:
    """--xla, and what it compiles."""
    return modes.Xla(FLAGS.xla)


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
    return str(value)


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


def generate_data(problem: Problem) -> None:
    """Writes the problem's vocabulary and shards into --data_dir (what is missing only)."""
    data_dir = required("data_dir", "the directory to write the vocabulary and shards to")
    tfds_data_dir = FLAGS.tfds_data_dir and os.path.expanduser(FLAGS.tfds_data_dir)
    problem.use_source(FLAGS.data_source, tfds_data_dir)
    data_dir = os.path.expanduser(data_dir)
    if FLAGS.vocab_from:
        from t2t_keras.training.warm_start import adopt_vocabularies, find_parent

        adopt_vocabularies(problem, data_dir, find_parent(FLAGS.vocab_from))
    problem.generate_data(data_dir, os.path.expanduser(FLAGS.tmp_dir))


def binary_flag_names() -> set[str]:
    """The names of the flags the modules of t2t_keras.bin have defined in this process."""
    by_module = FLAGS.flags_by_module_dict()
    return {
        flag.name
        for module, defined in by_module.items()
        if module.startswith(f"{__package__}.")
        for flag in defined
    }


def forget_binaries() -> None:
    """Removes the t2t-* modules and their flags, so that importing one defines them anew.

    absl holds every flag of a process in one FlagValues, and the commands
    define flags of the same names: tests and the reference generator, which
    load several commands in one process, load each alone (`load_binary`).
    """
    for name in binary_flag_names() & set(FLAGS):
        delattr(FLAGS, name)
    for name in [name for name in sys.modules if name.startswith(f"{__package__}.t2t_")]:
        del sys.modules[name]


def load_binary(command: str) -> types.ModuleType:
    """The module of a t2t-* command (e.g. "t2t-decoder"), imported anew with only its flags."""
    forget_binaries()
    return importlib.import_module(f"{__package__}.{command.replace('-', '_')}")
