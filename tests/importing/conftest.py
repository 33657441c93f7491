"""The imported fixture model that the importer's tests share: t2t-importer run once,
as a real process, on tests/fixtures/marian/model."""

from __future__ import annotations

from pathlib import Path

import pytest
from binaries import run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "marian"


@pytest.fixture(scope="session")
def marian_train_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output_dir = tmp_path_factory.mktemp("imported") / "train"
    result = run(
        "t2t-importer", "--from=marian", f"--model_dir={FIXTURE / 'model'}",
        f"--output_dir={output_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return output_dir
