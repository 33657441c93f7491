"""Shared fixtures: a registry restored after each test, user packages on disk,
the embedded number-words problem's data and a tiny model trained on it, and
a pre-norm one with a vocabulary per language (built once per run, by
shared_fixtures.py).

Property tests run under Hypothesis's "ci" profile, the same examples on
every run, unless pytest is given another (--hypothesis-profile=dev): see
hypothesis_profiles.py.

The CPU is split into two logical devices for the whole session.
"""

from __future__ import annotations

import ctypes.util
import gc
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis_profiles import CI
from xla_optimization import TEST_FLAGS

# The default, so that a plain `pytest` draws what `make test` draws;
# --hypothesis-profile, applied after this file is read, overrides it.
settings.load_profile(CI)


# One pytest-xdist worker per core: each worker's TensorFlow (and each process a
# test starts, which inherits this) gets its share of the cores rather than
# spinning threads for all of them against the other workers.
def _threads_per_worker(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // workers)


_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(_threads_per_worker(_WORKERS)))


def _add_flag(variable: str, flag: str) -> None:
    """Appends `flag` (--name=value) to the environment variable, unless it sets --name."""
    flags = os.environ.get(variable, "")
    if flag.split("=")[0] not in flags:
        os.environ[variable] = f"{flags} {flag}".strip()


# What the binaries keep in the user's cache (--xla_cache_dir's compiled searches)
# goes to a folder of this session instead.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="t2t_keras_test_cache_")

# Every XLA compilation of the run, in the workers and in the processes tests
# start, is kept in one folder of the run (TensorFlow's persistent cache,
# keyed by the compiled computation): a search or step that many tests
# compile alike is compiled once. The
# controller makes the folder; the workers, started after, inherit it. Tests
# of the cache itself set TF_XLA_FLAGS of their own.
_XLA_CACHE = "T2T_KERAS_TEST_XLA_CACHE"
_MADE_XLA_CACHE = _XLA_CACHE not in os.environ  # In the controller (or a run without workers).
if _MADE_XLA_CACHE:
    os.environ[_XLA_CACHE] = tempfile.mkdtemp(prefix="t2t_keras_test_xla_")
_add_flag("TF_XLA_FLAGS", f"--tf_xla_persistent_cache_directory={os.environ[_XLA_CACHE]}")

# Every process the run starts (the workers, and the binaries, servers and
# scripts tests start) allocates through tcmalloc where it is installed (Debian's
# libtcmalloc-minimal4; .ci/run installs it): tracing and compiling allocate and
# free millions of small blocks, which glibc's malloc serves slower and returns
# to the system only to fault back in. 1,031 tests, 2 cores: 5:49 of pytest
# against 6:57 and 7:04, 11 min 0 s of CPU against 13 min 6 s.
# The workers inherit it from the controller, which alone looks it up.
if _MADE_XLA_CACHE and (_TCMALLOC := ctypes.util.find_library("tcmalloc_minimal")):
    os.environ.setdefault("LD_PRELOAD", _TCMALLOC)

# XLA's compiled code unoptimized by LLVM: a run's compilations take about a third
# of its CPU time at full optimization, and the tests' tiny shapes run as fast
# either way (1003 tests: 11 min 13 s against 16 min 11 s of CPU, 2 cores). And
# fused loops emitted by XLA's earlier CPU emitters, not its MLIR fusion emitters:
# the SavedModel test's seven searches take 17 s of CPU, not 24 s. The HLO and its
# fusions are the same either way; one test runs t2t-decoder as users do and
# checks that it decodes the same (tests/bin/test_t2t_decoder.py). A flag of
# these set in XLA_FLAGS already wins.
for _flag in TEST_FLAGS:
    _add_flag("XLA_FLAGS", _flag)

import tensorflow as tf  # noqa: E402

from t2t_keras import catalog, registry  # noqa: E402
from t2t_keras.training import split_cpu  # noqa: E402

catalog.load()

import shared_fixtures  # noqa: E402

# Two logical CPU devices, so MirroredStrategy is tested for real; this must
# happen before TensorFlow initializes its devices.
split_cpu(2)

# Grappler's rewrites of each graph before its first run are off in the test
# workers: the tests' tiny graphs gain less from them than the rewriting costs,
# a quarter of a run's CPU time (1,031 tests: 12 min 44 s of CPU against
# 16 min 56 s, 2 cores). Every process a test starts (t2t-decoder,
# t2t-trainer, t2t-server, ...) runs with them, as users' processes do.
tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})

_package_numbers = itertools.count()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the imports made (TensorFlow's modules above all) lives as long as the
    worker: frozen, Python's full garbage collections stop walking it again at
    each collection. Collections took a twentieth of a worker's CPU time, and
    about half as much since."""
    gc.collect()
    gc.freeze()


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


@pytest.fixture(scope="session")
def number_words_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data_dir holding the vocabulary and shards of translate_number_words_en_de."""
    return shared_fixtures.number_words_data(_shared_root(tmp_path_factory))


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """output_dir of transformer_tiny trained 200 steps on number words (ckpt-50..200).

    Treat it as read-only: tests that change a training directory copy it first.
    """
    return shared_fixtures.trained_dir(_shared_root(tmp_path_factory))


@pytest.fixture(scope="session")
def pre_norm_trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """output_dir of a pre-norm tiny model with two vocabularies, three embedding
    matrices and learned positions, trained 80 steps on NumberWordsTwoVocabularies;
    its data_dir is the sibling "data". Read-only, as trained_dir."""
    return shared_fixtures.pre_norm_trained_dir(_shared_root(tmp_path_factory))


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary directory; under pytest-xdist, the workers' common parent."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist, the controller starts building the shared models at once,
    in a process beside the workers, rather than one worker building while the
    other waits for them."""
    config = session.config
    if os.environ.get("PYTEST_XDIST_WORKER") or config.getoption("dist", "no") == "no":
        return
    workers = config.getoption("numprocesses") or 1
    threads = _threads_per_worker(int(workers))
    root = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    config.stash[_BUILDER] = shared_fixtures.start_building(root, threads)


def pytest_sessionfinish(session: pytest.Session) -> None:
    builder = session.config.stash.get(_BUILDER, None)
    if builder is not None and builder.poll() is None:
        builder.kill()
        builder.wait()
    if _MADE_XLA_CACHE:
        shutil.rmtree(os.environ[_XLA_CACHE], ignore_errors=True)


_BUILDER = pytest.StashKey[subprocess.Popen]()
