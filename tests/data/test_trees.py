"""Treebank trees: reading, cleaning, linearizing as in Vinyals & Kaiser, and back."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras.data import trees

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


def test_read_clean_and_linearize() -> None:
    first, second = [
        trees.clean(trees.parse_tree(text)) for text in trees.read_trees(MRG.splitlines())
    ]
    assert str(first) == "(S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .))"
    assert first.words() == ["Mr.", "Vinken", "is", "chairman", "."]
    assert trees.linearize(first) == "(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"
    assert str(second) == "(NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-))"


def test_delinearize_rebuilds_the_tree_with_xx_tags() -> None:
    tree = trees.clean(trees.parse_tree(next(trees.read_trees(MRG.splitlines()))))
    rebuilt = trees.delinearize(trees.linearize(tree), tree.words())
    assert rebuilt == "(S (NP (XX Mr.) (XX Vinken)) (VP (XX is) (NP (XX chairman))) (XX .))"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("(S XX (NP XX", "(S (XX a) (NP (XX b)))"),  # Brackets left open are closed.
        ("(S XX )S )S )NP XX", "(S (XX a)) (XX b)"),  # Extra closings are ignored.
        ("(S XX XX XX )S", "(S (XX a) (XX b))"),  # More XX than words.
    ],
)
def test_delinearize_any_output(target: str, expected: str) -> None:
    assert trees.delinearize(target, ["a", "b"]) == expected


@pytest.mark.parametrize("text", ["(S (NP x)", "(S (NP x))) ", "word (S x)"])
def test_bad_trees_raise(text: str) -> None:
    with pytest.raises(trees.TreeError):
        list(trees.parse_tree(tree) for tree in trees.read_trees([text]))


@pytest.mark.skipif(not PTB.exists(), reason="../shared/data/ptb is absent")
def test_every_wsj_tree_round_trips() -> None:
    texts = list(trees.read_trees(PTB.read_text(encoding="utf-8").splitlines()))
    assert len(texts) == 3914
    for text in texts:
        tree = trees.clean(trees.parse_tree(text))
        words = tree.words()
        target = trees.linearize(tree)
        assert target.split().count(trees.POS_PLACEHOLDER) == len(words)
        expected = trees.parse_tree(trees.delinearize(target, words))
        assert trees.linearize(expected) == target and expected.words() == words
