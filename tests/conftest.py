"""Shared fixtures: a registry restored after each test, user packages on disk.

The CPU is split into two logical devices for the whole session.
"""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.training import split_cpu

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
