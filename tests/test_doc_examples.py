"""The examples of docs/ work as written, and the failure table names tests that exist."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from doc_pages import DOCS, ROOT, code_blocks

DATA_AND_PROBLEMS = DOCS / "data_and_problems.md"
FAILURES = DOCS / "failures.md"


def write_tsv(path: Path, count: int) -> None:
    """English-German pairs, one tab-separated pair per line."""
    path.parent.mkdir(exist_ok=True)
    lines = [f"house number {i}\tHaus Nummer {i}\n" for i in range(count)]
    path.write_text("".join(lines), encoding="utf-8")


def python_block(page: Path, first_line: str) -> str:
    (block,) = [block for block in code_blocks(page, "python") if block.startswith(first_line)]
    return block


def test_usr_dir_example(tmp_path: Path) -> None:
    source = python_block(DATA_AND_PROBLEMS, "# my_t2t/")
    package_file = tmp_path / source.splitlines()[0].removeprefix("# ")
    package_file.parent.mkdir()
    package_file.write_text(source)
    write_tsv(tmp_path / "raw" / "train.tsv", 400)
    write_tsv(tmp_path / "raw" / "dev.tsv", 40)
    (commands,) = [
        block for block in code_blocks(DATA_AND_PROBLEMS, "sh") if "--t2t_usr_dir=my_t2t" in block
    ]
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

    example = python_block(DATA_AND_PROBLEMS, "# example: batches")
    result = subprocess.run(
        [sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    shapes = re.findall(r"^\(\d+, \d+\) \(\d+, \d+\)$", result.stdout, flags=re.MULTILINE)
    assert len(shapes) == 2
    for line in shapes:
        rows, length = map(int, re.findall(r"\d+", line)[:2])
        assert rows * length <= 4096


def test_model_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    source = python_block(DATA_AND_PROBLEMS, "# example: model")
    # In this process: a second one would only import TensorFlow again.
    exec(compile(source, str(DATA_AND_PROBLEMS), "exec"), {"__name__": "example"})
    assert capsys.readouterr().out.strip().startswith("(2, 1, ")


def test_every_failure_in_the_table_is_checked_by_a_test_that_exists() -> None:
    table = FAILURES.read_text(encoding="utf-8").split("\n| what happened |", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]  # No header.
    assert len(rows) >= 25
    for row in rows:
        checked_by = row.rstrip(" |").rsplit(" | ", 1)[1]
        references = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", checked_by)
        assert references, row
        for path, name in references:
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.MULTILINE), (
                f"{path}::{name}"
            )
