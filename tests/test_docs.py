"""docs/ stays true: the reference is the code's, links land, commands take their flags."""

from __future__ import annotations

import difflib
import importlib.util
import re
import shlex
import types
from pathlib import Path

import pytest
from absl import flags
from doc_pages import (
    DOCS,
    README,
    ROOT,
    anchors,
    code_blocks,
    contents_list,
    headings,
    links,
    pages,
)

# A page this long or longer opens with a list of its sections.
LONG_PAGE_LINES = 100


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


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_and_heading(page: Path) -> None:
    for link in links(page):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} names no file"
        if fragment and target.suffix == ".md":
            assert fragment in anchors(target), f"{page.name}: {link} names no heading"


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda page: page.name)
def test_a_long_page_opens_with_its_contents(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    sections = headings(page)
    if len(text.splitlines()) < LONG_PAGE_LINES or len(sections) < 2:
        return
    before_first_section = text.split("\n## ", 1)[0]
    listed = contents_list(before_first_section)
    assert [(level, title) for level, title, _ in listed] == sections, page.name


def test_commands_in_the_docs_take_the_flags_they_are_given(
    generator: types.ModuleType,
) -> None:
    known = {command: set() for command in generator.binaries()}
    for command in known:
        _, defined = generator.binary_flags(command)
        known[command] = {flag.name for flag in defined}
    absl_flags = set(flags.FLAGS)  # --verbosity, --helpfull, ...: every command has them.
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for block in code_blocks(page, "sh"):
            for line in block.replace("\\\n", " ").splitlines():
                for command, names in _commands(line):
                    unknown = names - known[command] - absl_flags
                    assert not unknown, f"{page.name}: {command} takes no {unknown}: {line}"


def _commands(line: str) -> list[tuple[str, set[str]]]:
    """Each t2t-* command of a shell line, with the flag names given to it."""
    found: list[tuple[str, set[str]]] = []
    for word in shlex.split(line, comments=True):
        word = word.strip("[]")
        if word.startswith("t2t-"):
            found.append((word, set()))
        elif found and found[-1][0] and word.startswith("--"):
            found[-1][1].add(word[2:].split("=", 1)[0])
        if word in ("||", "&&", "|") or word.endswith(";"):  # The command ends.
            found.append(("", set()))
    return [(command, names) for command, names in found if command]
