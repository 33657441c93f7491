"""The README is a front page: the two commands first, then a contents list that lands."""

from __future__ import annotations

from doc_pages import README, anchors, code_blocks, contents_list, headings, links


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
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250, (
        "README.md is the front page: move the details into a page of docs/."
    )
