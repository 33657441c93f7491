"""The README is a front page: the two commands first, then a contents list that lands."""

from __future__ import annotations

import re

import pytest
from doc_pages import DOCS, README, anchors, code_blocks, contents_list, headings, links, section


def test_readme_starts_with_the_two_commands() -> None:
    first_block = code_blocks(README, "sh")[0]
    assert (
        first_block.splitlines()[:2]
        == [line for line in first_block.splitlines() if line.startswith("make ")][:2]
    )
    assert first_block.startswith("make demo") and "\nmake test" in first_block


def test_contents_lists_every_section_and_every_link_lands() -> None:
    text = README.read_text(encoding="utf-8")
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = [(level, title) for level, title, _ in contents_list(contents)]
    sections = [(level, title) for level, title in headings(README) if title != "Contents"]
    assert listed == sections
    fragments = {link.removeprefix("#") for link in links(README) if link.startswith("#")}
    assert fragments and fragments <= anchors(README), fragments - anchors(README)


def test_the_front_page_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 180, (
        "README.md is the front page: move the details into a page of docs/."
    )


RESULTS = ("Quality per training minute", "Speed")


def table_rows(text: str) -> list[str]:
    """The rows of every Markdown table in text, header rows too, separators left out."""
    rows = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    return [row for row in rows if not re.fullmatch(r"[|\s:-]+", row)]


@pytest.mark.parametrize("title", RESULTS)
def test_each_result_is_a_table_of_docs_benchmarks_with_its_commit_and_command(
    title: str,
) -> None:
    text = section(README, title)
    rows = table_rows(text)
    assert rows, f"README's {title} holds no table"
    results = {row for row in table_rows((DOCS / "benchmarks.md").read_text(encoding="utf-8"))}
    missing = [row for row in rows if row not in results]
    assert missing == [], (
        "Rows of the README that docs/benchmarks.md does not hold with the same values "
        "(the results page is where figures live; copy its rows):\n" + "\n".join(missing)
    )
    assert re.search(r"`[0-9a-f]{7,}`", text), f"README's {title} names no commit"
    assert any("benchmarks/" in block for block in re.findall(r"```sh\n(.*?)```", text, re.S))
