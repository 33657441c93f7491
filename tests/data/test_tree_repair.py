"""Any model output becomes a PTB tree over exactly the input's words, and well-formed ones
come back unchanged (a property test over random trees of the WSJ sample's labels)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.data import trees
from t2t_keras.data.tree_repair import RULES, RepairCounts, output_tree
from t2t_keras.metrics import evalb

PTB = Path(__file__).resolve().parents[3] / "shared" / "data" / "ptb" / "wsj_0001-0199.oneline.mrg"
WORDS = ["The", "cat", "sat"]
TREE = "(TOP (S (NP (XX The) (XX cat)) (VP (XX sat))))"
GOLD = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat))))"

# (model output, the tree it gives over WORDS, the repairs it needs): 20 kinds.
CASES = [
    ("(S (NP XX XX )NP (VP XX )VP )S", TREE, set()),
    ("(S (NP XX XX )NP (VP XX", TREE, {"unclosed"}),
    ("(S (NP XX XX )NP (VP XX )VP )S )S )NP", TREE, {"extra_close"}),
    (")S (S (NP XX XX )NP (VP XX )VP )S", TREE, {"extra_close"}),
    ("(S (NP XX XX )VP (VP XX )NP )S", TREE, {"mismatched_close"}),
    ("(S (NP XX XX ) (VP XX ) )", TREE, {"mismatched_close"}),
    ("(S (NP XX XX )NP (ADVP )ADVP (VP XX )VP )S", TREE, {"empty_constituent"}),
    ("(S (NP XX the XX )NP <unk> (VP XX )VP )S", TREE, {"stray_token"}),
    ("(S (NP XX XX )NP (VP", TREE, {"missing_words", "unclosed"}),
    (
        "(S (NP XX XX XX )NP (VP XX XX )VP )S",
        "(TOP (S (NP (XX The) (XX cat) (XX sat))))",
        {"extra_words", "empty_constituent"},
    ),
    (
        "(S (NP XX )NP (VP XX )VP )S",
        "(TOP (S (NP (XX The)) (VP (XX cat)) (XX sat)))",
        {"missing_words"},
    ),
    ("", "(TOP (XX The) (XX cat) (XX sat))", {"missing_words", "no_tree"}),
    ("XX XX XX", "(TOP (XX The) (XX cat) (XX sat))", {"no_tree"}),
    (")S )NP ) )", "(TOP (XX The) (XX cat) (XX sat))", {"extra_close", "missing_words", "no_tree"}),
    (
        "(S (NP XX XX )NP )S (VP XX )VP",
        "(TOP (S (NP (XX The) (XX cat))) (VP (XX sat)))",
        {"several_roots"},
    ),
    (
        "XX (S (NP XX )NP (VP XX )VP )S",
        "(TOP (XX The) (S (NP (XX cat)) (VP (XX sat))))",
        {"several_roots"},
    ),
    (
        "(S ( XX XX )NP (VP XX )VP )S",
        "(TOP (S (XX The) (XX cat)) (VP (XX sat)))",
        {"stray_token", "mismatched_close", "several_roots", "extra_close"},
    ),
    (
        "(S (NP )NP )S",
        "(TOP (S (XX The) (XX cat) (XX sat)))",
        {"missing_words", "empty_constituent"},
    ),
    ("(S (S (S (S XX XX XX", "(TOP (S (S (S (S (XX The) (XX cat) (XX sat))))))", {"unclosed"}),
    (
        "(NP(VP XX XX )NP) (S XX )S",
        "(TOP (XX The) (XX cat) (S (XX sat)))",
        {"stray_token", "several_roots"},
    ),
]


@pytest.mark.parametrize(("output", "expected", "repairs"), CASES)
def test_any_output_becomes_a_tree_over_the_words(
    output: str, expected: str, repairs: set[str]
) -> None:
    tree, applied = output_tree(output, WORDS)
    assert (str(tree), applied) == (expected, repairs)
    assert trees.parse_tree(str(tree)).words() == WORDS  # Well formed, and readable again.
    score = evalb.score_sentence(trees.parse_tree(GOLD), tree)
    assert score.error is None and score.matched <= min(score.gold_brackets, score.test_brackets)


def test_an_output_nested_too_deep_still_gives_a_tree() -> None:
    tree, repairs = output_tree("(S " * 5000 + "XX )S" * 10, WORDS)
    assert {"stray_token", "missing_words", "unclosed"} <= repairs
    assert trees.parse_tree(str(tree)).words() == WORDS
    with pytest.raises(trees.TreeError, match="nested deeper than 200"):
        trees.parse_tree("(S " * 300 + "(X a)" + ")" * 300)


def test_the_cases_cover_every_rule() -> None:
    assert set().union(*(repairs for _, _, repairs in CASES)) == set(RULES)
    assert len(CASES) >= 15


def test_punctuation_keeps_its_treebank_tag_so_evalb_deletes_it_in_both_trees() -> None:
    words = [
        "``",
        "He",
        "'",
        "s",
        ",",
        "said",
        "the",
        "dogs",
        "'",
        "owner",
        "--",
        "`",
        "No",
        "'",
        ".",
    ]
    tree, _ = output_tree(f"(S {' '.join(['XX'] * len(words))} )S", words)
    tags = [tag for _, tag in tree.tagged_words()]
    assert tags == [
        "``",
        "XX",
        "POS",
        "XX",
        ",",
        "XX",
        "XX",
        "XX",
        "POS",
        "XX",
        ":",
        "``",
        "XX",
        "''",
        ".",
    ]
    gold = (
        "(TOP (S (`` ``) (NP (PRP He)) (POS ') (NNS s) (, ,) (VBD said) (DT the) (NNS dogs) "
        "(POS ') (NN owner) (: --) (`` `) (DT No) ('' ') (. .)))"
    )
    score = evalb.score_sentence(trees.parse_tree(gold), tree)
    assert score.status == evalb.VALID and score.words == 9


def test_counts_say_how_many_outputs_needed_which_rule() -> None:
    counts = RepairCounts()
    for output, _, _ in CASES[:4]:
        counts.add(output_tree(output, WORDS)[1])
    assert (counts.outputs, counts.repaired) == (4, 3)
    assert str(counts) == "4 output trees, 3 repaired (extra_close 2, unclosed 1)"


def _sample_labels() -> tuple[list[str], list[str]]:
    """(constituent labels, POS tags) of the WSJ sample, or a few common ones without it."""
    if not PTB.exists():
        return ["S", "NP", "VP", "PP", "ADVP", "PRT", "SBAR"], ["DT", "NN", "VBD", ",", ".", "``"]
    phrases, tags = set(), set()
    for _, tree in trees.read_trees(PTB.read_text(encoding="utf-8").splitlines()[:300]):
        stack = [trees.clean(tree)]
        while stack:
            node = stack.pop()
            (tags if node.is_preterminal else phrases).add(node.label)
            stack.extend(node.children)
    return sorted(phrases), sorted(tags)


PHRASES, TAGS = _sample_labels()
_words = st.sampled_from(["a", "b", "-LRB-", "-RRB-", "Mr.", "'s", "&", "1,000"])
_preterminals = st.builds(
    lambda tag, word: trees.Tree(tag, word=word), st.sampled_from(TAGS), _words
)
_trees = st.recursive(
    _preterminals,
    lambda children: st.builds(
        trees.Tree, st.sampled_from(PHRASES), st.lists(children, min_size=1, max_size=4)
    ),
    max_leaves=30,
).filter(lambda tree: not tree.is_preterminal)


@ci_budget(150, deadline=None)
@given(_trees)
def test_linearized_trees_come_back_and_score_100_against_themselves(tree: trees.Tree) -> None:
    target, words = trees.linearize(tree), tree.words()
    rebuilt, repairs = output_tree(target, words)
    assert not repairs
    assert rebuilt.words() == words and trees.linearize(trees.unwrap(rebuilt)) == target
    for test in (tree, rebuilt):  # Every tree against itself, the one read back included.
        everything, _ = evalb.summarize([evalb.score_sentence(test, test)])
        assert everything.errors == 0 and everything.matched == everything.gold_brackets
        assert everything.f1 == (100.0 if everything.gold_brackets else 0.0)
        assert everything.valid == 0 or everything.tagging_accuracy == 100.0
