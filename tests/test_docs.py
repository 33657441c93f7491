"""docs/reference/ is what docs/generate_reference.py makes of the code."""

from __future__ import annotations

import difflib
import importlib.util
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def generator() -> types.ModuleType:
    """docs/generate_reference.py, what `make docs` runs."""
    spec = importlib.util.spec_from_file_location(
        "generate_reference", DOCS / "generate_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_is_the_codes(generator: types.ModuleType) -> None:
    for path, text in generator.pages().items():
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        name = path.relative_to(ROOT)
        difference = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), text.splitlines(True), "committed", "from the code"
                )
            )[:40]
        )
        assert committed == text, (
            f"{name} does not match the code: run `make docs` and commit it.\n{difference}"
        )


def test_the_reference_has_every_hparams_class(generator: types.ModuleType) -> None:
    sources = [*(ROOT / "t2t_keras").rglob("*.py"), *(ROOT / "problems").rglob("*.py")]
    sources += [*(ROOT / "hparams").rglob("*.py")]
    defined = {
        name
        for source in sources
        for name in re.findall(r"^class (\w+)\(HParams\)", source.read_text(), re.MULTILINE)
    }
    assert defined == {cls.__name__ for cls in generator.HPARAMS_CLASSES}
