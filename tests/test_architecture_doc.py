"""docs/architecture.md names the rooms tests/test_imports.py enforces, in its order."""

from __future__ import annotations

import re
from pathlib import Path

from test_imports import LAYERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def test_the_document_lists_the_enforced_rooms_bottom_to_top() -> None:
    section = DOC.read_text(encoding="utf-8").split("## Rooms, bottom to top\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    items = re.split(r"^\d+\. ", section, flags=re.MULTILINE)[1:]
    # Each numbered item opens with its rooms, in backticks, before the first colon.
    layers = [tuple(re.findall(r"`(t2t_keras[\w.]*)`", item.split(":", 1)[0])) for item in items]
    assert layers == [tuple(layer) for layer in LAYERS]
