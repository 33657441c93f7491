"""Shared fixtures: a registry restored after each test, user packages on disk,
the embedded number-words problem's data and a tiny model trained on it.

The CPU is split into two logical devices for the whole session.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from t2t_keras import catalog, registry
from t2t_keras.training import split_cpu

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


@pytest.fixture(scope="session")
def number_words_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data_dir holding the vocabulary and shards of translate_number_words_en_de."""
    root = tmp_path_factory.mktemp("number_words")
    registry.problem(NUMBER_WORDS).generate_data(str(root / "data"), str(root / "tmp"))
    return root / "data"


@pytest.fixture(scope="session")
def trained_dir(number_words_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """output_dir of transformer_tiny trained 200 steps on number words (ckpt-50..200).

    Treat it as read-only: tests that change a training directory copy it first.
    """
    from t2t_keras.hparams.transformer import transformer_tiny
    from t2t_keras.training import make_strategy
    from t2t_keras.training.config import TrainConfig
    from t2t_keras.training.trainer import train

    output_dir = tmp_path_factory.mktemp("trained") / "train"
    config = TrainConfig(
        train_steps=TRAINED_STEPS,
        eval_steps=0,
        eval_every_steps=0,
        eval_bleu_examples=0,
        save_checkpoints_steps=50,
        random_seed=1,
    )
    train(
        registry.problem(NUMBER_WORDS),
        "transformer",
        transformer_tiny(),
        str(number_words_data),
        str(output_dir),
        make_strategy("one_device"),
        config,
        hparams_set="transformer_tiny",
    )
    return output_dir
