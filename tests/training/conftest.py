"""Generated data of the embedded number-words problem, shared by the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras import registry

PROBLEM = "translate_number_words_en_de"


@pytest.fixture(scope="session")
def number_words_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data_dir holding the vocabulary and shards of translate_number_words_en_de."""
    root = tmp_path_factory.mktemp("number_words")
    registry.problem(PROBLEM).generate_data(str(root / "data"), str(root / "tmp"))
    return root / "data"
