"""Treebank trees: reading either layout with bad trees reported, cleaning, linearizing."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras.data import trees
from t2t_keras.data.tree_repair import output_tree

PTB = Path(__file__).resolve().parents[3] / "shared" / "data" / "ptb" / "wsj_0001-0199.oneline.mrg"

MRG = """\
( (S
    (NP-SBJ-1 (NNP Mr.) (NNP Vinken) )
    (VP (VBZ is)
      (NP-PRD (NN chairman) )
      (S (NP-SBJ (-NONE- *-1) ) ))
    (. .) ))
( (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-) ))
"""


def read(text: str) -> list[tuple[int, trees.Tree | trees.TreeError]]:
    return list(trees.read_trees(text.splitlines()))


def test_read_clean_and_linearize() -> None:
    (line_1, first), (line_2, second) = read(MRG)
    assert (line_1, line_2) == (1, 7)
    first, second = trees.clean(first), trees.clean(second)
    assert str(first) == "(S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .))"
    assert first.words() == ["Mr.", "Vinken", "is", "chairman", "."]
    assert trees.linearize(first) == "(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"
    assert str(second) == "(NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-))"


@pytest.mark.parametrize(
    ("label", "base"),
    [
        ("NP-SBJ-1", "NP"),
        ("NP=2", "NP"),
        ("PP-LOC-CLR", "PP"),
        ("-NONE-", "-NONE-"),
        ("PRP$", "PRP$"),
    ],
)
def test_base_label(label: str, base: str) -> None:
    assert trees.base_label(label) == base


def test_outer_brackets_are_unwrapped() -> None:
    for text in ("(TOP (S (NN x)))", "(ROOT (S (NN x)))", "( (S (NN x)))", "(S (NN x))"):
        assert str(trees.clean(trees.parse_tree(text))) == "(S (NN x))"


def test_malformed_trees_are_reported_with_their_line_and_the_rest_read() -> None:
    text = "\n".join(
        [
            "(S (NP (DT a)) (VP (VB b)))",
            "(S (NP (DT a)) (VP (VB b))",  # unbalanced: one ")" short
            "(S (NP (DT a))) (VP (VB b)))",  # a closing bracket too many
            "(S (NP (DT a) word) (VP (VB b)))",  # a word beside a constituent
            "(S (NP) (VP (VB b)))",  # an empty constituent
            "(S (NP (DT c)) (VP (VB d)))",
            "( (S (NP (DT e))",  # unbalanced at the end of the file
        ]
    )
    found = read(text)
    good = [(line, str(tree)) for line, tree in found if isinstance(tree, trees.Tree)]
    bad = {line: str(error) for line, error in found if isinstance(error, trees.TreeError)}
    assert good == [(1, "(S (NP (DT a)) (VP (VB b)))"), (6, "(S (NP (DT c)) (VP (VB d)))")]
    assert sorted(bad) == [2, 3, 4, 5, 7]
    assert "unbalanced" in bad[2] and "unbalanced" in bad[7] and "outside any tree" in bad[3]


def test_a_multiline_tree_left_open_is_reported_where_it_starts() -> None:
    broken = MRG.replace("(. .) ))", "(. .) )", 1)  # The first tree is one ")" short.
    found = read(broken)
    assert [(line, type(tree).__name__) for line, tree in found] == [(1, "TreeError"), (7, "Tree")]


def test_escape_words() -> None:
    assert trees.escape_words(" a ( b )  { c } [ d ] f(x) ") == [
        "a", "-LRB-", "b", "-RRB-", "-LCB-", "c", "-RCB-", "-LSB-", "d", "-RSB-", "f-LRB-x-RRB-",
    ]  # fmt: skip


@pytest.mark.skipif(not PTB.exists(), reason="../shared/data/ptb is absent")
def test_every_wsj_tree_reads_and_comes_back_from_its_linearization() -> None:
    found = read(PTB.read_text(encoding="utf-8"))
    assert len(found) == 3914 and all(isinstance(tree, trees.Tree) for _, tree in found)
    for _, tree in found:
        tree = trees.clean(tree)
        words = tree.words()
        target = trees.linearize(tree)
        assert target.split().count(trees.POS_PLACEHOLDER) == len(words)
        rebuilt, repairs = output_tree(target, words)
        assert not repairs and rebuilt.words() == words
        assert trees.linearize(trees.unwrap(rebuilt)) == target
