"""Shared fixtures: a registry restored after each test, user packages on disk,
the embedded number-words problem's data and a tiny model trained on it, and
a pre-norm one with a vocabulary per language.

Property tests run under Hypothesis's "ci" profile, the same examples on
every run, unless pytest is given another (--hypothesis-profile=dev): see
hypothesis_profiles.py.

The CPU is split into two logical devices for the whole session.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import itertools
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis_profiles import CI

# The default, so that a plain `pytest` draws what `make test` draws;
# --hypothesis-profile, applied after this file is read, overrides it.
settings.load_profile(CI)

# One pytest-xdist worker per core: each worker's TensorFlow (and each process a
# test starts, which inherits this) gets its share of the cores rather than
# spinning threads for all of them against the other workers.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

# What the binaries keep in the user's cache (--xla_cache_dir's compiled searches)
# goes to a folder of this session instead.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="t2t_keras_test_cache_")

from t2t_keras import catalog, registry  # noqa: E402
from t2t_keras.problems.number_words import TranslateNumberWordsEnDe  # noqa: E402
from t2t_keras.training import split_cpu  # noqa: E402

catalog.load()

# Two logical CPU devices, so MirroredStrategy is tested for real; this must
# happen before TensorFlow initializes its devices.
split_cpu(2)

_package_numbers = itertools.count()


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Registrations made by the test are undone afterwards."""
    snapshot = registry._snapshot()
    yield
    registry._restore(snapshot)


@pytest.fixture
def make_package(tmp_path: Path, clean_registry: None) -> Iterator[Callable[..., Path]]:
    """Writes a Python package of the given files; returns its directory.

    Each package gets a unique name, and is removed from sys.modules afterwards.
    """
    names = []

    def make(files: dict[str, str], name: str | None = None) -> Path:
        name = name or f"usr_package_{next(_package_numbers)}"
        names.append(name)
        directory = tmp_path / name
        directory.mkdir()
        for file_name, text in files.items():
            (directory / file_name).write_text(textwrap.dedent(text))
        return directory

    yield make
    for module in list(sys.modules):
        if module.split(".")[0] in names:
            del sys.modules[module]


NUMBER_WORDS = "translate_number_words_en_de"
TRAINED_STEPS = 200


@contextlib.contextmanager
def built_once(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path | None]:
    """A directory built once per test run, also when pytest-xdist runs several workers.

    Yields the directory's path if the caller must build it (it is locked from
    the other workers meanwhile), else None; the directory is then complete.
    """
    root = _shared_root(tmp_path_factory)
    done = root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            yield None
            return
        yield root / name
        done.touch()


@pytest.fixture(scope="session")
def number_words_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data_dir holding the vocabulary and shards of translate_number_words_en_de."""
    with built_once(tmp_path_factory, "number_words") as root:
        if root is not None:
            registry.problem(NUMBER_WORDS).generate_data(str(root / "data"), str(root / "tmp"))
    return _shared_root(tmp_path_factory) / "number_words" / "data"


@pytest.fixture(scope="session")
def trained_dir(number_words_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """output_dir of transformer_tiny trained 200 steps on number words (ckpt-50..200).

    Treat it as read-only: tests that change a training directory copy it first.
    """
    with built_once(tmp_path_factory, "trained") as root:
        if root is not None:
            _train_tiny(number_words_data, root / "train")
    return _shared_root(tmp_path_factory) / "trained" / "train"


class NumberWordsTwoVocabularies(TranslateNumberWordsEnDe):
    """The number-words problem with a vocabulary per language (never registered)."""

    data_name = "number_words_two_vocabularies"
    shared_vocab = False
    num_samples = {"train": 3000, "dev": 50, "test": 50}  # noqa: RUF012
    dataset_splits = {"train": 1, "dev": 1, "test": 1}  # noqa: RUF012


@pytest.fixture(scope="session")
def pre_norm_trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """output_dir of a pre-norm tiny model with two vocabularies, three embedding
    matrices and learned positions, trained 80 steps on NumberWordsTwoVocabularies;
    its data_dir is the sibling "data". Read-only, as trained_dir."""
    with built_once(tmp_path_factory, "pre_norm") as root:
        if root is not None:
            _train_pre_norm(root)
    return _shared_root(tmp_path_factory) / "pre_norm" / "train"


def _train_pre_norm(root: Path) -> None:
    from t2t_keras.hparams.transformer import transformer_tiny
    from t2t_keras.training import make_strategy
    from t2t_keras.training.config import TrainConfig
    from t2t_keras.training.trainer import train

    problem = NumberWordsTwoVocabularies()
    problem.generate_data(str(root / "data"), str(root / "tmp"))
    hparams = dataclasses.replace(
        transformer_tiny(),
        layer_norm_position="pre",
        shared_embeddings=False,
        tie_target_embeddings=False,
        position_encoding="learned",
        max_length=64,
    )
    config = TrainConfig(
        train_steps=80,
        eval_steps=0,
        eval_every_steps=0,
        eval_bleu_examples=0,
        random_seed=1,
        xla="off",  # Compiling each bucket's attention costs more than a short run saves.
    )
    train(
        problem,
        "transformer",
        hparams,
        str(root / "data"),
        str(root / "train"),
        make_strategy("one_device"),
        config,
    )


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary directory; under pytest-xdist, the workers' common parent."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def _train_tiny(data_dir: Path, output_dir: Path) -> None:
    from t2t_keras.hparams.transformer import transformer_tiny
    from t2t_keras.training import make_strategy
    from t2t_keras.training.config import TrainConfig
    from t2t_keras.training.trainer import train

    config = TrainConfig(
        train_steps=TRAINED_STEPS,
        eval_steps=0,
        eval_every_steps=0,
        eval_bleu_examples=0,
        save_checkpoints_steps=50,
        random_seed=1,
        xla="off",  # As above; decoding tests choose their own XLA setting.
    )
    train(
        registry.problem(NUMBER_WORDS),
        "transformer",
        transformer_tiny(),
        str(data_dir),
        str(output_dir),
        make_strategy("one_device"),
        config,
        hparams_set="transformer_tiny",
    )
