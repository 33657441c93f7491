"""parsing_english_wsj16k on the Penn Treebank's directory layout (sections 02-21, 22, 23)."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.data import records
from t2t_keras.errors import UserError

TREE = """( (S
    (NP-SBJ (DT The) (NN index) )
    (VP (VBD rose) (NP-EXT (CD {n}) (NNS points) ))
    (. .) ))
"""


def write_section_files(root: Path, files: dict[str, int]) -> None:
    """wsj_SSNN.mrg files of `count` multi-line trees each, in parsed/mrg/wsj/SS/."""
    for name, count in files.items():
        path = root / "parsed" / "mrg" / "wsj" / name[4:6] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(TREE.format(n=i) for i in range(count)))


def test_sections_become_splits(tmp_path: Path) -> None:
    # Section 00 and 24 belong to no split; 02 and 21 are train, 22 dev, 23 test.
    files = {"wsj_0001.mrg": 5, "wsj_0200.mrg": 30, "wsj_2199.mrg": 20}
    files |= {"wsj_2200.mrg": 7, "wsj_2300.mrg": 9, "wsj_2400.mrg": 4}
    write_section_files(tmp_path / "treebank", files)
    problem = registry.problem("parsing_english_wsj16k")
    problem.generate_data(str(tmp_path / "data"), str(tmp_path / "treebank"))
    counts = {
        split: records.count_records(problem.data_files(str(tmp_path / "data"), split))
        for split in ("train", "dev", "test")
    }
    assert counts == {"train": 50, "dev": 7, "test": 9}
    ((words, tree),) = problem.text_examples(str(tmp_path / "data"), "test", 1)
    assert words == "The index rose 0 points ."
    assert tree == "(S (NP XX XX )NP (VP XX (NP XX XX )NP )VP XX )S"


def test_without_the_treebank_it_says_where_to_point(tmp_path: Path) -> None:
    problem = registry.problem("parsing_english_wsj16k")
    with pytest.raises(UserError, match=r"No WSJ train trees under .*LDC99T42"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))


def test_a_broken_tree_names_the_file(tmp_path: Path) -> None:
    write_section_files(tmp_path, {"wsj_0200.mrg": 3})
    path = tmp_path / "parsed" / "mrg" / "wsj" / "02" / "wsj_0200.mrg"
    path.write_text(path.read_text() + "( (S (NP x) \n")
    problem = registry.problem("parsing_english_wsj16k")
    with pytest.raises(UserError, match=r"wsj_0200\.mrg: An unfinished tree"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))
