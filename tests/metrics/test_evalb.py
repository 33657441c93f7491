"""EVALB's rules (the program with COLLINS.prm), case by case, and its output line for line.

The expected output below is what the EVALB program (evalb.c, compiled) printed
for these eleven pairs with COLLINS.prm; `format_report` must print the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras.metrics import evalb
from t2t_keras.metrics.evalb import TreeError, parse_tree, score_lines, score_sentence

PTB_SAMPLE = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "ptb" / "wsj_0001-0199.oneline.mrg"
)
LONG = " ".join(f"(NN w{i})" for i in range(41))
# 1 punctuation at another height; 2 flat; 3 PRT = ADVP and NP-SBJ = NP; 4 a crossing
# bracket; 5 a unary chain (multiset) under an outer "" bracket, which is scored;
# 6 a trace gone and XX tags; 7 punctuation tagged XX (not deleted: an error); 8 only
# punctuation (skipped); 9 a word mismatch; 10, 11 over 40 words, right and wrong.
GOLD = [
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))",
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))",
    "(TOP (S (NP-SBJ (PRP He)) (VP (VBD gave) (PRT (RP up))) (. .)))",
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down)))))",
    "( (S (NP (NP (NNS cats))) (VP (VBP sleep)) (. .)) )",
    "(TOP (S (NP-SBJ-1 (PRP He)) (VP (VBD was) (VP (VBN seen) (NP (-NONE- *-1)))) (. .)))",
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))",
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))",
    "(TOP (S (`` ``) (NP (DT The) (NN cat)) (VP (VBD sat)) (. .) ('' '')))",
    f"(TOP (S (NP {LONG}) (VP (VBD ran))))",
    f"(TOP (S (NP {LONG}) (VP (VBD ran))))",
]
TEST = [
    "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat))) (. .))))",
    "(TOP (S (DT The) (NN cat) (VBD sat) (IN on) (DT the) (NN mat) (. .)))",
    "(TOP (S (NP (PRP He)) (VP (VBD gave) (ADVP (RP up))) (. .)))",
    "(TOP (S (DT The) (X (NN cat) (VBD sat)) (ADVP (RB down))))",
    "( (S (NP (NNS cats)) (VP (VBP sleep)) (. .)) )",
    "(TOP (S (NP (XX He)) (VP (XX was) (VP (XX seen))) (. .)))",
    "(TOP (S (NP (XX The) (XX cat)) (VP (XX sat)) (XX .)))",
    "(TOP (S (. .)))",
    "(TOP (S (NP (DT The) (NN dog)) (VP (VBD sat)) (. .)))",
    f"(TOP (S (NP {LONG}) (VP (VBD ran))))",
    f"(TOP (S (NP {LONG}) (VP (VBD walked))))",
]
EXPECTED = """\
  Sent.                        Matched  Bracket   Cross        Correct Tag
 ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy
============================================================================
   1    7    0  100.00 100.00     5      5    5      0      6     6   100.00
   2    7    0   20.00 100.00     1      5    1      0      6     6   100.00
   3    4    0  100.00 100.00     4      4    4      0      3     3   100.00
   4    4    0   50.00  66.67     2      4    3      1      4     4   100.00
   5    3    0   80.00 100.00     4      5    4      0      2     2   100.00
   6    4    0  100.00 100.00     4      4    4      0      3     0     0.00
   7    4    1    0.00   0.00     0      0    0      0      0     0     0.00
   8    4    2    0.00   0.00     0      0    0      0      0     0     0.00
   9    6    1    0.00   0.00     0      0    0      0      0     0     0.00
  10   42    0  100.00 100.00     3      3    3      0     42    42   100.00
  11   42    1    0.00   0.00     0      0    0      0      0     0     0.00
============================================================================
                 76.67  95.83     23    30    24      1     66    63    95.45
=== Summary ===

-- All --
Number of sentence        =     11
Number of Error sentence  =      3
Number of Skip  sentence  =      1
Number of Valid sentence  =      7
Bracketing Recall         =  76.67
Bracketing Precision      =  95.83
Bracketing FMeasure       =  85.19
Complete match            =  57.14
Average crossing          =   0.14
No crossing               =  85.71
2 or less crossing        = 100.00
Tagging accuracy          =  95.45

-- len<=40 --
Number of sentence        =      9
Number of Error sentence  =      2
Number of Skip  sentence  =      1
Number of Valid sentence  =      6
Bracketing Recall         =  74.07
Bracketing Precision      =  95.24
Bracketing FMeasure       =  83.33
Complete match            =  50.00
Average crossing          =   0.17
No crossing               =  83.33
2 or less crossing        = 100.00
Tagging accuracy          =  87.50
"""


def score(gold: str, test: str) -> evalb.SentenceScore:
    return score_sentence(parse_tree(gold), parse_tree(test))


def test_the_output_is_evalbs_line_for_line() -> None:
    assert evalb.format_report(score_lines(GOLD, TEST), sentences=True) + "\n" == EXPECTED


def test_the_summary_alone_is_evalbs_summary() -> None:
    summary = EXPECTED[EXPECTED.index("=== Summary ===") :]
    assert evalb.format_report(score_lines(GOLD, TEST)) + "\n" == summary


@pytest.mark.parametrize(
    ("number", "counts"),
    [
        (1, (5, 5, 5, 0)),  # Punctuation attached higher changes no span.
        (2, (1, 5, 1, 0)),
        (3, (4, 4, 4, 0)),
        (4, (2, 4, 3, 1)),  # X(1,3) crosses NP(0,2) and VP(2,4): one crossing bracket.
        (5, (4, 5, 4, 0)),  # Gold NP(0,1) twice, test once; the outer "" bracket matches.
        (6, (4, 4, 4, 0)),
    ],
)
def test_hand_built_cases_score_as_evalb(number: int, counts: tuple[int, int, int, int]) -> None:
    result = score(GOLD[number - 1], TEST[number - 1])
    assert result.status == evalb.VALID
    assert (result.matched, result.gold_brackets, result.test_brackets, result.crossing) == counts


def test_errors_and_skips() -> None:
    assert score(GOLD[6], TEST[6]).error == "Length unmatch (3|4)"  # "." tagged XX is kept.
    assert score(GOLD[7], TEST[7]).status == evalb.SKIP
    assert score(GOLD[8], TEST[8]).error == "Words unmatch (cat|dog)"
    assert score_lines([GOLD[0]], [""])[0].status == evalb.SKIP
    (broken,) = score_lines([GOLD[0]], ["(S (NP (DT a)"], names=("--gold", "--test"))
    assert broken.status == evalb.ERROR and broken.malformed
    assert broken.error.startswith("--test line 1 is not a tree") and broken.length == 7


def test_labels_are_cut_at_a_dash_or_equals_sign() -> None:
    assert [evalb.scoring_label(x) for x in ("NP-SBJ-1", "NP=2", "PRT", "-NONE-", "TOP-1")] == [
        "NP", "NP", "ADVP", "", "TOP",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text", ["(S (NP (DT a)", "(S (NP (DT a))))", "(S a (NP (DT a)))", "", "(S (NP (DT a))) (S)"]
)
def test_malformed_trees_are_refused(text: str) -> None:
    with pytest.raises(TreeError):
        parse_tree(text)


def test_the_wsj_sample_against_itself_scores_100() -> None:
    if not PTB_SAMPLE.exists():
        pytest.skip(f"{PTB_SAMPLE.parent} is absent")
    lines = [line for line in PTB_SAMPLE.read_text().splitlines() if line.strip()]
    everything, short = evalb.summarize(score_lines(lines, lines))
    assert everything.sentences == len(lines) > 3000 and everything.errors == 0
    assert everything.f1 == short.f1 == everything.tagging_accuracy == 100.0
    assert everything.complete_match == everything.sentences
    assert short.sentences < everything.sentences  # Some sample sentences exceed 40 words.


def test_outer_brackets_that_evalb_scores_differently_are_warned_about() -> None:
    tree = "(S (NP (DT a)) (VP (VB b)))"
    # EVALB scores "" and ROOT outer brackets, not TOP: the first pair loses a bracket.
    assert "outer brackets" in evalb.outer_bracket_warning([f"( {tree} )"], [f"(TOP {tree})"])
    assert evalb.outer_bracket_warning([f"(ROOT {tree})"], [f"( {tree} )"]) is not None
    assert evalb.outer_bracket_warning([tree], [f"(TOP {tree})"]) is None
    assert evalb.outer_bracket_warning([f"( {tree} )"], [f"( {tree} )"]) is None
    gold, test = score(f"( {tree} )", f"(TOP {tree})"), score(f"(TOP {tree})", f"(TOP {tree})")
    assert (gold.gold_brackets, gold.test_brackets, test.gold_brackets) == (4, 3, 3)
