"""Reading the project's Markdown pages: code blocks, headings, sections and links.

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """The README and every page under docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def code_blocks(page: Path, language: str) -> list[str]:
    """The text of each fenced block of `language`, in order."""
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


def prose(page: Path) -> str:
    """The page without its fenced code blocks."""
    return re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)


def headings(page: Path, levels: tuple[int, ...] = (2, 3)) -> list[tuple[int, str]]:
    """(level, title) of each heading of these levels, outside code blocks."""
    found = re.finditer(r"^(#{1,6}) (.+)$", prose(page), re.MULTILINE)
    return [(len(m[1]), m[2]) for m in found if len(m[1]) in levels]


def anchor(title: str) -> str:
    """The fragment GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(title) for _, title in headings(page, levels=(1, 2, 3, 4, 5, 6))}


def section(page: Path, title: str) -> str:
    """The text under the ## heading `title`, up to the next ## heading."""
    text = page.read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def contents_list(text: str) -> list[tuple[int, str, str]]:
    """(level, title, fragment) of each item of a contents list: `- [title](#fragment)`."""
    items = re.findall(r"^( *)- \[(.+)\]\(#(.+)\)$", text, re.MULTILINE)
    return [(2 + len(indent) // 2, title, fragment) for indent, title, fragment in items]


def links(page: Path) -> list[str]:
    """The target of every Markdown link outside code blocks."""
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose(page))
