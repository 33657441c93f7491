"""The README's examples work as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_starts_with_the_two_commands() -> None:
    first_block = code_blocks("sh")[0]
    assert (
        first_block.splitlines()[:2]
        == [line for line in first_block.splitlines() if line.startswith("make ")][:2]
    )
    assert first_block.startswith("make demo") and "\nmake test" in first_block


def headings() -> list[tuple[int, str]]:
    """(level, title) of each ## and ### heading outside code blocks."""
    prose = re.sub(r"```.*?```", "", README.read_text(), flags=re.DOTALL)
    return [(len(m[1]), m[2]) for m in re.finditer(r"^(##|###) (.+)$", prose, re.MULTILINE)]


def anchor(title: str) -> str:
    """The fragment GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_contents_lists_every_section_and_every_link_lands() -> None:
    text = README.read_text()
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^( *)- \[(.+)\]\(#(.+)\)$", contents, re.MULTILINE)
    sections = [(level, title) for level, title in headings() if title != "Contents"]
    assert [(2 + len(indent) // 2, title) for indent, title, _ in listed] == sections
    targets = {anchor(title) for _, title in headings()}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links and set(links) <= targets, set(links) - targets


def write_tsv(path: Path, count: int) -> None:
    """English-German pairs, one tab-separated pair per line."""
    path.parent.mkdir(exist_ok=True)
    lines = [f"house number {i}\tHaus Nummer {i}\n" for i in range(count)]
    path.write_text("".join(lines), encoding="utf-8")


def test_usr_dir_example(tmp_path: Path) -> None:
    (source,) = [block for block in code_blocks("python") if block.startswith("# my_t2t/")]
    package_file = tmp_path / source.splitlines()[0].removeprefix("# ")
    package_file.parent.mkdir()
    package_file.write_text(source)
    write_tsv(tmp_path / "raw" / "train.tsv", 400)
    write_tsv(tmp_path / "raw" / "dev.tsv", 40)
    (commands,) = [block for block in code_blocks("sh") if "--t2t_usr_dir=my_t2t" in block]
    outputs = []
    for line in commands.strip().splitlines():
        binary, *args = shlex.split(line)
        script = Path(sys.executable).parent / binary
        result = subprocess.run(
            [str(script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    listing, hparams_help, datagen = outputs
    assert re.search(r"\n  my_corpus +English-German pairs", listing)
    assert re.search(r"\n  transformer_base_my_corpus +Base with more dropout", listing)
    assert "  dropout = 0.3 (float):" in hparams_help
    assert "  max_length = 128 (int):" in hparams_help
    assert "wrote 400 train examples to 10 shard(s)" in datagen
    assert (tmp_path / "data" / "vocab.my_corpus.model").exists()

    (example,) = [
        block for block in code_blocks("python") if block.startswith("# example: batches")
    ]
    result = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    shapes = re.findall(r"^\(\d+, \d+\) \(\d+, \d+\)$", result.stdout, flags=re.MULTILINE)
    assert len(shapes) == 2
    for line in shapes:
        rows, length = map(int, re.findall(r"\d+", line)[:2])
        assert rows * length <= 4096


def test_model_example_runs() -> None:
    (source,) = [block for block in code_blocks("python") if block.startswith("# example: model")]
    result = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("(2, 1, ")


def test_every_failure_in_the_table_is_checked_by_a_test_that_exists() -> None:
    section = README.read_text().split("## When things go wrong", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]  # No header.
    assert len(rows) >= 25
    root = README.parent
    for row in rows:
        checked_by = row.rstrip(" |").rsplit(" | ", 1)[1]
        references = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", checked_by)
        assert references, row
        for path, name in references:
            assert re.search(rf"^def {name}\(", (root / path).read_text(), re.MULTILINE), (
                f"{path}::{name}"
            )
