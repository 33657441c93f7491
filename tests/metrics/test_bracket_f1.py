"""Labeled bracket precision, recall and F1 on linearized trees, against hand counts."""

from __future__ import annotations

import collections
import itertools
from pathlib import Path

import pytest

from t2t_keras.data import trees
from t2t_keras.errors import UserError
from t2t_keras.metrics import MalformedTreeError, bracket_f1, labeled_brackets

# Brackets: S [0,5), NP [0,2), VP [2,4), NP [3,4).
REFERENCE = "(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"
PTB_SAMPLE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "data"
    / "ptb"
    / "wsj_0001-0199.oneline.mrg"
)


def test_brackets_are_labelled_spans_in_word_positions() -> None:
    brackets, words = labeled_brackets(REFERENCE)
    assert words == 5
    assert brackets == collections.Counter(
        {("S", 0, 5): 1, ("NP", 0, 2): 1, ("VP", 2, 4): 1, ("NP", 3, 4): 1}
    )


def test_identical_trees_score_100() -> None:
    score = bracket_f1([REFERENCE, "(S XX )S"], [REFERENCE, "(S XX )S"])
    assert (score.precision, score.recall, score.f1) == (100.0, 100.0, 100.0)
    assert (score.matched, score.proposed, score.gold, score.malformed) == (5, 5, 5, 0)


def test_one_wrong_label() -> None:
    score = bracket_f1(["(S (NP XX XX )NP (VP XX (PP XX )PP )VP XX )S"], [REFERENCE])
    assert (score.matched, score.proposed, score.gold) == (3, 4, 4)
    assert (score.precision, score.recall, score.f1) == (75.0, 75.0, 75.0)


def test_one_wrong_span() -> None:
    # VP covers [2,5) instead of [2,4).
    score = bracket_f1(["(S (NP XX XX )NP (VP XX (NP XX )NP XX )VP )S"], [REFERENCE])
    assert (score.precision, score.recall, score.f1) == (75.0, 75.0, 75.0)


def test_a_missing_bracket_costs_recall_only() -> None:
    score = bracket_f1(["(S (NP XX XX )NP (VP XX XX )VP XX )S"], [REFERENCE])
    assert (score.precision, score.recall) == (100.0, 75.0)
    assert score.f1 == pytest.approx(2 * 100 * 75 / 175)


def test_malformed_hypothesis_proposes_nothing_but_its_reference_counts() -> None:
    hypotheses = [REFERENCE, "(S (NP XX XX )VP (VP XX (NP XX )NP )VP XX )S"]
    score = bracket_f1(hypotheses, [REFERENCE, REFERENCE])
    assert (score.matched, score.proposed, score.gold) == (4, 4, 8)
    assert (score.precision, score.recall) == (100.0, 50.0)
    assert score.f1 == pytest.approx(200 / 3)
    assert (score.malformed, score.sentences) == (1, 2)
    assert str(score) == (
        "Bracket F1 = 66.67 (precision 100.00, recall 50.00; 1 of 2 outputs malformed)"
    )


def test_wrong_word_count_is_malformed() -> None:
    score = bracket_f1(["(S (NP XX XX )NP XX )S"], [REFERENCE])
    assert (score.malformed, score.proposed, score.f1) == (1, 0, 0.0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "(S (NP XX XX )NP",  # Left open.
        "(S XX )S )S",  # Closes more than it opened.
        "(S (NP XX )VP )S",  # Closing label differs.
        "(S (NP )NP XX )S",  # Empty constituent.
        "(S XX Haus )S",  # A word that is not XX.
        "(S XX ) )S",  # A closing bracket without label.
        "XX (S XX )S",  # A word outside the tree.
        "(S XX )S (S XX )S",  # Two trees.
    ],
)
def test_malformed_trees_are_refused(text: str) -> None:
    with pytest.raises(MalformedTreeError):
        labeled_brackets(text)
    # And they never crash the corpus score.
    assert bracket_f1([text], ["(S XX XX )S"]).malformed == 1


def test_advp_and_prt_are_one_label_as_in_collins_prm() -> None:
    score = bracket_f1(["(S (VP XX (ADVP XX )ADVP )VP )S"], ["(S (VP XX (PRT XX )PRT )VP )S"])
    assert score.f1 == 100.0


def test_brackets_are_a_multiset() -> None:
    # The reference's unary chain has (S, 0, 1) twice; one hypothesis bracket matches once.
    score = bracket_f1(["(S XX )S"], ["(S (S XX )S )S"])
    assert (score.matched, score.proposed, score.gold) == (1, 1, 2)


def test_bad_corpora_are_user_errors() -> None:
    with pytest.raises(UserError, match="2 hypotheses but 1 references"):
        bracket_f1([REFERENCE, REFERENCE], [REFERENCE])
    with pytest.raises(UserError, match="No trees to score"):
        bracket_f1([], [])
    with pytest.raises(UserError, match="Reference tree 2 is not a linearized tree"):
        bracket_f1([REFERENCE, REFERENCE], [REFERENCE, "(S XX"])


def _spans(tree: trees.Tree, start: int) -> tuple[list[tuple[str, int, int]], int]:
    """A constituent tree's labelled spans, read off the Tree itself."""
    if tree.word is not None:
        return [], start + 1
    spans, end = [], start
    for child in tree.children:
        child_spans, end = _spans(child, end)
        spans += child_spans
    return [(tree.label, start, end), *spans], end


def test_real_treebank_spans_match_the_trees() -> None:
    if not PTB_SAMPLE.parent.is_dir():
        pytest.skip(f"{PTB_SAMPLE.parent} is absent")
    with PTB_SAMPLE.open(encoding="utf-8") as lines:
        texts = list(itertools.islice(trees.read_trees(lines), 300))
    cleaned = [tree for text in texts if (tree := trees.clean(trees.parse_tree(text)))]
    targets = [trees.linearize(tree) for tree in cleaned]
    for tree, target in zip(cleaned, targets, strict=True):
        spans, words = _spans(tree, 0)
        expected = collections.Counter(
            ("ADVP" if label == "PRT" else label, start, end) for label, start, end in spans
        )
        assert labeled_brackets(target) == (expected, words)
    score = bracket_f1(targets, targets)
    assert score.f1 == 100.0
    assert score.gold == sum(len(_spans(tree, 0)[0]) for tree in cleaned)
