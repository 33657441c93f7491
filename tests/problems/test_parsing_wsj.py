"""The WSJ parsing problems on both treebank layouts, the semi-supervised one, bad trees."""

from __future__ import annotations

import logging
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
LINE = "(TOP (S (NP (DT A) (NN {word})) (VP (VBD fell) (NP (CD {n}) (NNS points))) (. .)))"


def write_section_files(root: Path, files: dict[str, int]) -> None:
    """wsj_SSNN.mrg files of `count` multi-line trees each, in parsed/mrg/wsj/SS/."""
    for name, count in files.items():
        path = root / "parsed" / "mrg" / "wsj" / name[4:6] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(TREE.format(n=i) for i in range(count)))


def write_lines(path: Path, count: int, word: str = "index") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(LINE.format(word=word, n=i) + "\n" for i in range(count)))


def counts(problem_name: str, data_dir: Path) -> dict[str, int]:
    problem = registry.problem(problem_name)
    return {
        split: records.count_records(problem.data_files(str(data_dir), split))
        for split in problem.dataset_splits
    }


def test_ldc_sections_become_splits_and_test_keeps_its_gold_trees(tmp_path: Path) -> None:
    # Section 00 and 24 belong to no split; 02 and 21 are train, 22 dev, 23 test.
    files = {"wsj_0001.mrg": 5, "wsj_0200.mrg": 30, "wsj_2199.mrg": 20}
    files |= {"wsj_2200.mrg": 7, "wsj_2300.mrg": 9, "wsj_2400.mrg": 4}
    write_section_files(tmp_path / "treebank", files)
    problem = registry.problem("parsing_english_wsj16k")
    data_dir = tmp_path / "data"
    problem.generate_data(str(data_dir), str(tmp_path / "treebank"))
    assert counts("parsing_english_wsj16k", data_dir) == {"train": 50, "dev": 7, "test": 9}
    ((words, gold), *_) = problem.text_examples(str(data_dir), "test", 2)
    assert words == "The index rose 0 points ."
    # Cleaned as the targets are (function tags gone), tags kept, under TOP.
    assert (
        gold == "(TOP (S (NP (DT The) (NN index)) (VP (VBD rose) (NP (CD 0) (NNS points))) (. .)))"
    )
    assert len(problem.text_examples(str(data_dir), "test", -1)) == 9
    targets = problem.text_examples(str(data_dir), "train", 1)[0][1]
    assert targets == "(S (NP XX XX )NP (VP XX (NP XX XX )NP )VP XX )S"
    (data_dir / "parsing_english_wsj16k-dev.references").unlink()
    with pytest.raises(UserError, match=r"no gold trees of the dev split.*t2t-datagen"):
        problem.text_examples(str(data_dir), "dev", 1)
    problem.generate_data(str(data_dir), str(tmp_path / "treebank"))  # Writes them again.
    assert len(problem.text_examples(str(data_dir), "dev", -1)) == 7
    # Brackets, XX and escaped brackets are one piece each: targets stay short.
    vocab = problem.feature_encoders(str(data_dir))["targets"]
    assert len(vocab.encode("(SBAR (WHNP XX )WHNP (S XX -LRB- )S )SBAR")) == 9


@pytest.mark.parametrize("names", [("train", "dev", "test"), ("02-21.10way", "22.auto", "23.auto")])
def test_one_tree_a_line_files_are_found_before_mrg_files(
    tmp_path: Path, names: tuple[str, str, str]
) -> None:
    write_section_files(tmp_path, {"wsj_0200.mrg": 3, "wsj_2200.mrg": 3, "wsj_2300.mrg": 3})
    suffix = ".trees" if names[0] == "train" else ".clean"
    for name, count in zip(names, (40, 6, 5), strict=True):
        write_lines(tmp_path / f"{name}{suffix}", count)
    data_dir = tmp_path / "data"
    registry.problem("parsing_english_wsj16k").generate_data(str(data_dir), str(tmp_path))
    assert counts("parsing_english_wsj16k", data_dir) == {"train": 40, "dev": 6, "test": 5}


def test_without_the_treebank_it_says_where_to_point(tmp_path: Path) -> None:
    problem = registry.problem("parsing_english_wsj16k")
    with pytest.raises(UserError, match=r"No WSJ train trees under .*train\.trees.*LDC99T42"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))


def test_malformed_trees_are_reported_by_file_and_line_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_lines(tmp_path / "train.trees", 30)
    lines = (tmp_path / "train.trees").read_text().splitlines()
    lines[4] = lines[4][:-1]  # Unbalanced: one ")" short.
    lines[9] += ")"  # A closing bracket too many.
    (tmp_path / "train.trees").write_text("\n".join(lines) + "\n")
    write_section_files(tmp_path, {"wsj_2200.mrg": 2, "wsj_2300.mrg": 2})
    mrg = tmp_path / "parsed" / "mrg" / "wsj" / "23" / "wsj_2300.mrg"
    mrg.write_text(mrg.read_text().replace("(. .) ))", "(. .) )", 1))  # First tree left open.
    with caplog.at_level(logging.WARNING):
        registry.problem("parsing_english_wsj16k").generate_data(
            str(tmp_path / "data"), str(tmp_path)
        )
    assert counts("parsing_english_wsj16k", tmp_path / "data") == {"train": 28, "dev": 2, "test": 1}
    assert "train.trees, line 5: unbalanced brackets" in caplog.text
    assert "train.trees, line 10: ')' outside any tree" in caplog.text
    assert "train.trees: 2 malformed tree(s) skipped" in caplog.text
    assert "wsj_2300.mrg, line 1: unbalanced brackets" in caplog.text


def test_semisupervised_adds_the_users_silver_trees(tmp_path: Path) -> None:
    for split, count in (("train", 20), ("dev", 4), ("test", 4)):
        write_lines(tmp_path / f"{split}.trees", count)
    problem = registry.problem("parsing_english_wsj_semisup32k")
    with pytest.raises(UserError, match=r"No silver trees in .*silver\*\.trees"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    write_lines(tmp_path / "silver-1.trees", 25, word="market")
    write_lines(tmp_path / "silver-2.trees", 15, word="stock")
    problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    assert counts("parsing_english_wsj_semisup32k", tmp_path / "data")["train"] == 60
    assert problem.approx_vocab_size == 32_000 and not problem.shared_vocab
    assert (
        problem.text_examples(str(tmp_path / "data"), "test", 1)[0][0] == "A index fell 0 points ."
    )
