"""The model-free baseline trees: their shapes, and their EVALB scores against literal gold trees."""

from __future__ import annotations

from t2t_keras.data import trees
from t2t_keras.data.tree_baselines import baseline_trees, flat_tree, right_branching_tree
from t2t_keras.metrics import evalb


def test_flat_tree_hangs_every_word_under_one_constituent() -> None:
    assert flat_tree("The cat sat .") == "(TOP (S (XX The) (XX cat) (XX sat) (. .)))"


def test_right_branching_tree_nests_the_rest_of_the_sentence() -> None:
    assert right_branching_tree("The cat sat .") == (
        "(TOP (S (XX The) (S (XX cat) (S (XX sat) (. .)))))"
    )
    assert right_branching_tree("Hi") == "(TOP (S (XX Hi)))"


def test_sentences_without_words_give_empty_lines_and_brackets_are_escaped() -> None:
    assert flat_tree("   ") == right_branching_tree("") == ""
    tree = trees.parse_tree(right_branching_tree("f(x) ( y )"))
    assert tree.words() == ["f-LRB-x-RRB-", "-LRB-", "y", "-RRB-"]


def test_baselines_score_as_evalb_scores_them() -> None:
    gold = ["(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))"]
    built = baseline_trees(["The cat sat ."])
    # Flat: S over all words is the gold S (1 of 1 test bracket; 1 of 3 gold).
    flat, _ = evalb.summarize(evalb.score_lines(gold, built["flat"]))
    assert (flat.precision, round(flat.recall, 2)) == (100.0, 33.33)
    # Right-branching: S spans (0,3), (1,3), (2,3) once punctuation is deleted;
    # only the outer S is gold, so 1 of 3 either way.
    branching, _ = evalb.summarize(evalb.score_lines(gold, built["right_branching"]))
    assert round(branching.precision, 2) == round(branching.recall, 2) == 33.33
