"""EVALB's rules (COLLINS.prm), case by case, and the WSJ sample scored against itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras.metrics.evalb import TreeError, evalb, parse_tree, score_sentence

PTB_SAMPLE = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "ptb" / "wsj_0001-0199.oneline.mrg"
)
GOLD = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))"


def score(gold: str, test: str):
    return score_sentence(parse_tree(gold), parse_tree(test))


def test_a_tree_against_itself_matches_every_bracket() -> None:
    result = score(GOLD, GOLD)
    # S, NP, VP, PP, NP: TOP and the preterminals are not brackets.
    assert (result.matched, result.gold_brackets, result.test_brackets) == (5, 5, 5)
    assert (result.length, result.words, result.correct_tags) == (7, 6, 6)  # "." not tagged


def test_punctuation_attached_at_another_height_changes_nothing() -> None:
    # The period inside the VP: spans are counted over words without punctuation.
    test = (
        "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat))) (. .))))"
    )
    assert score(GOLD, test).matched == 5


def test_unary_chains_match_as_multisets() -> None:
    gold = "(TOP (S (NP (NP (NN cats))) (VP (VBP sleep))))"
    test = "(TOP (S (NP (NN cats)) (VP (VBP sleep))))"
    result = score(gold, test)  # Gold has NP(0,1) twice, test once.
    assert (result.matched, result.gold_brackets, result.test_brackets) == (3, 4, 3)


def test_advp_and_prt_are_one_label_and_function_tags_are_stripped() -> None:
    gold = "(TOP (S (NP-SBJ (PRP He)) (VP (VBD gave) (PRT (RP up)))))"
    test = "(TOP (S (NP (PRP He)) (VP (VBD gave) (ADVP (RP up)))))"
    assert score(gold, test).matched == 4


def test_a_crossing_bracket_is_counted() -> None:
    gold = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down)))))"
    test = "(TOP (S (DT The) (X (NN cat) (VBD sat)) (ADVP (RB down))))"
    result = score(gold, test)  # X(1,3) crosses NP(0,2) and VP(2,4).
    assert (result.matched, result.crossing) == (2, 1)


def test_traces_and_their_empty_constituents_are_deleted() -> None:
    gold = "(TOP (S (NP (PRP He)) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-1))))))"
    test = "(TOP (S (NP (PRP He)) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-1))))))"
    result = score(gold, test)
    assert (result.gold_brackets, result.length) == (3, 2)


def test_a_word_mismatch_is_an_error_not_a_score() -> None:
    test = GOLD.replace("mat", "hat")
    result = score(GOLD, test)
    assert result.error and "word 6" in result.error and "'hat'" in result.error
    everything, _, _ = evalb([parse_tree(GOLD)] * 2, [parse_tree(GOLD), parse_tree(test)])
    assert (everything.sentences, everything.errors, everything.f1) == (2, 1, 100.0)


@pytest.mark.parametrize(
    "text", ["(S (NP (DT a)", "(S (NP (DT a))))", "(S a (NP (DT a)))", "", "(S (NP (DT a))) (S)"]
)
def test_malformed_trees_are_refused(text: str) -> None:
    with pytest.raises(TreeError):
        parse_tree(text)


def test_the_wsj_sample_against_itself_scores_100() -> None:
    if not PTB_SAMPLE.exists():
        pytest.skip(f"{PTB_SAMPLE.parent} is absent")
    trees = [parse_tree(line) for line in PTB_SAMPLE.read_text().splitlines() if line.strip()]
    everything, short, _ = evalb(trees, trees)
    assert everything.sentences == len(trees) > 3000 and everything.errors == 0
    assert everything.f1 == short.f1 == everything.tagging_accuracy == 100.0
    assert everything.complete_match_percent == 100.0
    assert short.sentences < everything.sentences  # Some sample sentences exceed 40 words.
