"""Labeled bracket scores of PTB trees, as the EVALB program computes them with COLLINS.prm.

The rules (EVALB's evalb.c and COLLINS.prm), applied to each gold/test pair:
  - A word whose own tree tags it with a DELETE_LABEL (-NONE-, and the
    punctuation tags , : `` '' .) is removed from that tree; gold and test
    are read the same way, each by its own tags. A constituent whose span
    holds no remaining word is not a bracket.
  - If the test tree keeps no word, the sentence is skipped; if the two keep
    different numbers of words, or different words, it is an error. Skipped
    and error sentences are counted and left out of every score.
  - A constituent's label is cut at its first "-" or "=" (NP-SBJ-1 and NP=2
    are NP; -NONE- becomes ""); a constituent labelled TOP is not scored,
    but its children are. An outer bracket labelled "" or ROOT *is* scored,
    as EVALB does: give gold and test trees the same outer bracket.
  - PRT and ADVP are one label. Brackets (label, start, end) match as
    multisets; a test bracket that crosses a gold one counts once.
  - Length is the gold tree's words except -NONE-, punctuation included;
    the `<= 40` summary keeps the sentences (errors and skips too) of at most
    40 such words.
  - Tagging accuracy compares the tags of the kept words.
`format_report` prints EVALB's summary (and per-sentence table) line for line.
EVALB stops after MAX_ERROR errors (10 in COLLINS.prm); this never stops.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Sequence

from t2t_keras.data.trees import Tree, TreeError, parse_tree

DELETE_LABELS = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
DELETE_FOR_LENGTH = frozenset({"-NONE-"})
EQUAL_LABELS = {"PRT": "ADVP"}
CUTOFF_LENGTH = 40
VALID, ERROR, SKIP = 0, 1, 2  # EVALB's sentence status.

Bracket = tuple[str, int, int]  # (label, first kept word, one past the last)

__all__ = ["Tree", "TreeError", "evalb", "format_report", "parse_tree", "score_lines"]

_LABEL_END = re.compile(r"[-=]")
_OUTER_LABEL = re.compile(r"\s*\(\s*([^\s()]*)\s*\(")


def scoring_label(label: str) -> str:
    """The label EVALB compares: cut at its first "-" or "=", PRT as ADVP."""
    label = _LABEL_END.split(label, maxsplit=1)[0]
    return EQUAL_LABELS.get(label, label)


@dataclasses.dataclass
class SentenceScore:
    """One sentence's counts as EVALB's per-sentence table has them.

    Attributes:
      length: gold words except -NONE- (EVALB's "Len.").
      status: VALID, ERROR or SKIP.
      error: what made it an error or a skip.
      malformed: the error is a line that is not a tree.
    """

    length: int = 0
    status: int = VALID
    error: str | None = None
    malformed: bool = False
    matched: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0


def score_sentence(gold: Tree, test: Tree) -> SentenceScore:
    """EVALB's counts of `test` against `gold` (see the module docstring)."""
    gold_words, test_words = gold.tagged_words(), test.tagged_words()
    length = sum(tag not in DELETE_FOR_LENGTH for _, tag in gold_words)
    gold_kept = [pair for pair in gold_words if pair[1] not in DELETE_LABELS]
    test_kept = [pair for pair in test_words if pair[1] not in DELETE_LABELS]
    if not test_kept:
        return SentenceScore(length, SKIP, "the test tree keeps no word")
    if len(gold_kept) != len(test_kept):
        return SentenceScore(length, ERROR, f"Length unmatch ({len(gold_kept)}|{len(test_kept)})")
    for (gold_word, _), (test_word, _) in zip(gold_kept, test_kept, strict=True):
        if gold_word != test_word:
            return SentenceScore(length, ERROR, f"Words unmatch ({gold_word}|{test_word})")
    gold_set, test_set = _brackets(gold), _brackets(test)
    return SentenceScore(
        length,
        matched=sum((gold_set & test_set).values()),
        gold_brackets=sum(gold_set.values()),
        test_brackets=sum(test_set.values()),
        crossing=sum(count for bracket, count in test_set.items() if _crosses(bracket, gold_set)),
        words=len(gold_kept),
        correct_tags=sum(
            scoring_label(g) == scoring_label(t)
            for (_, g), (_, t) in zip(gold_kept, test_kept, strict=True)
        ),
    )


def _brackets(tree: Tree) -> collections.Counter[Bracket]:
    """The scored brackets of `tree`, spans counted in the words its own tags keep."""
    found: collections.Counter[Bracket] = collections.Counter()

    def visit(node: Tree, first: int) -> int:
        """Adds node's brackets; returns one past its last kept word."""
        if node.is_preterminal:
            return first + (node.label not in DELETE_LABELS)
        end = first
        for child in node.children:
            end = visit(child, end)
        label = scoring_label(node.label)
        if end > first and label not in DELETE_LABELS:
            found[(label, first, end)] += 1
        return end

    visit(tree, 0)
    return found


def _crosses(bracket: Bracket, gold: collections.Counter[Bracket]) -> bool:
    _, start, end = bracket
    return any(
        (g_start < start < g_end < end) or (start < g_start < end < g_end)
        for _, g_start, g_end in gold
    )


def score_lines(
    gold: Sequence[str], test: Sequence[str], names: tuple[str, str] = ("gold", "test")
) -> list[SentenceScore]:
    """Scores of tree lines paired in order.

    An empty test line is a skipped sentence (EVALB's reading of a tree
    with no words); a line that is not a tree is an error naming it.

    Args:
      gold, test: one bracketed tree per line, as many of each.
      names: what to call the two sides in an error, e.g. ("--gold", "--test").
    """
    if len(gold) != len(test):
        raise ValueError(f"{len(gold)} gold trees but {len(test)} test trees.")
    return [
        _score_line(gold_line, test_line, names, number)
        for number, (gold_line, test_line) in enumerate(zip(gold, test, strict=True), start=1)
    ]


def _score_line(
    gold_line: str, test_line: str, names: tuple[str, str], number: int
) -> SentenceScore:
    if not test_line.strip():  # EVALB skips a test tree without words.
        return SentenceScore(_gold_length(gold_line), SKIP, "an empty test line")
    try:
        gold_tree = _parsed(gold_line, names[0], number)
        test_tree = _parsed(test_line, names[1], number)
    except TreeError as error:
        return SentenceScore(_gold_length(gold_line), ERROR, str(error), malformed=True)
    return score_sentence(gold_tree, test_tree)


def outer_bracket_warning(gold: Sequence[str], test: Sequence[str]) -> str | None:
    """A warning if gold and test trees wrap sentences in differently scored outer brackets.

    EVALB scores an outer bracket labelled "" or ROOT as a constituent but not
    one labelled TOP: with "( (S ...) )" gold trees and "(TOP (S ...))" test
    trees, every sentence loses a bracket of recall.
    """
    differing = collections.Counter(
        (gold_label, test_label)
        for gold_line, test_line in zip(gold, test, strict=True)
        if (gold_label := _outer_label(gold_line)) is not None
        and (test_label := _outer_label(test_line)) is not None
        and _scored_wrapper(gold_label) != _scored_wrapper(test_label)
    )
    if not differing:
        return None
    (gold_label, test_label), count = differing.most_common(1)[0]
    return (
        f"{sum(differing.values())} sentence(s) have outer brackets EVALB scores differently, "
        f"e.g. gold {gold_label or '(empty)'} and test {test_label or '(empty)'} ({count}): "
        "EVALB scores an outer bracket labelled ROOT or left empty as a constituent, TOP "
        "not. Give both files the same outer bracket for comparable scores."
    )


def _scored_wrapper(label: str) -> str | None:
    """The label of an outer bracket EVALB scores although it only wraps the tree."""
    return label if label in ("", "ROOT") else None


def _outer_label(line: str) -> str | None:
    match = _OUTER_LABEL.match(line)
    return match.group(1) if match else None


def _gold_length(line: str) -> int:
    """The length of a gold line's tree; 0 if it is not one."""
    try:
        return _length(parse_tree(line))
    except TreeError:
        return 0


def _parsed(line: str, name: str, number: int) -> Tree:
    try:
        return parse_tree(line)
    except TreeError as error:
        raise TreeError(f"{name} line {number} is not a tree: {error}") from None


def _length(tree: Tree) -> int:
    return sum(tag not in DELETE_FOR_LENGTH for _, tag in tree.tagged_words())


@dataclasses.dataclass
class EvalbSummary:
    """EVALB's summary over sentences (all, or those of at most 40 words)."""

    sentences: int = 0
    errors: int = 0
    skipped: int = 0
    matched: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    complete_match: int = 0
    crossing: int = 0
    no_crossing: int = 0
    two_or_less_crossing: int = 0
    words: int = 0
    correct_tags: int = 0

    def add(self, score: SentenceScore) -> None:
        self.sentences += 1
        if score.status != VALID:
            self.errors += score.status == ERROR
            self.skipped += score.status == SKIP
            return
        for name in ("matched", "gold_brackets", "test_brackets", "crossing", "words"):
            setattr(self, name, getattr(self, name) + getattr(score, name))
        self.correct_tags += score.correct_tags
        self.complete_match += score.matched == score.gold_brackets == score.test_brackets
        self.no_crossing += score.crossing == 0
        self.two_or_less_crossing += score.crossing <= 2

    @property
    def valid(self) -> int:
        return self.sentences - self.errors - self.skipped

    @property
    def recall(self) -> float:
        return _percent(self.matched, self.gold_brackets)

    @property
    def precision(self) -> float:
        return _percent(self.matched, self.test_brackets)

    @property
    def f1(self) -> float:
        """2PR / (P + R); 0 where EVALB prints -nan (nothing matched or nothing to score)."""
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0

    @property
    def tagging_accuracy(self) -> float:
        return _percent(self.correct_tags, self.words)

    @property
    def complete_match_percent(self) -> float:
        """Valid sentences whose brackets all match, in percent."""
        return _percent(self.complete_match, self.valid)


def evalb(
    gold: Sequence[Tree], test: Sequence[Tree]
) -> tuple[EvalbSummary, EvalbSummary, list[SentenceScore]]:
    """(summary of all sentences, summary of those <= 40 words, per-sentence scores)."""
    if len(gold) != len(test):
        raise ValueError(
            f"{len(gold)} gold trees but {len(test)} test trees; they pair up line by line."
        )
    scores = [score_sentence(g, t) for g, t in zip(gold, test, strict=True)]
    return (*summarize(scores), scores)


def summarize(scores: Sequence[SentenceScore]) -> tuple[EvalbSummary, EvalbSummary]:
    """(summary of all sentences, of those whose gold length is at most CUTOFF_LENGTH)."""
    everything, short = EvalbSummary(), EvalbSummary()
    for score in scores:
        everything.add(score)
        if score.length <= CUTOFF_LENGTH:
            short.add(score)
    return everything, short


def format_report(scores: Sequence[SentenceScore], sentences: bool = False) -> str:
    """EVALB's output: with `sentences` its per-sentence table and totals, then its summary."""
    everything, short = summarize(scores)
    lines = []
    if sentences:
        lines += [
            "  Sent.                        Matched  Bracket   Cross        Correct Tag",
            " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
            "=" * 76,
            *(_sentence_row(number, score) for number, score in enumerate(scores, start=1)),
            "=" * 76,
            _totals_row(everything),
        ]
    lines += ["=== Summary ===", "", "-- All --", *_summary_lines(everything)]
    lines += ["", f"-- len<={CUTOFF_LENGTH} --", *_summary_lines(short)]
    return "\n".join(lines)


def _sentence_row(number: int, s: SentenceScore) -> str:
    recall, precision = _percent(s.matched, s.gold_brackets), _percent(s.matched, s.test_brackets)
    return (
        f"{number:4d}  {s.length:3d}    {s.status}  "
        f"{recall:6.2f} {precision:6.2f}   {s.matched:3d}    {s.gold_brackets:3d}  "
        f"{s.test_brackets:3d}    {s.crossing:3d}"
        f"   {s.words:4d}  {s.correct_tags:4d}   {_percent(s.correct_tags, s.words):6.2f}"
    )


def _totals_row(total: EvalbSummary) -> str:
    brackets = ""
    if total.gold_brackets and total.test_brackets:
        brackets = (
            f"                {total.recall:6.2f} {total.precision:6.2f} {total.matched:6d} "
            f"{total.gold_brackets:5d} {total.test_brackets:5d}  {total.crossing:5d}"
        )
    return f"{brackets}  {total.words:5d} {total.correct_tags:5d}   {total.tagging_accuracy:6.2f}"


def _summary_lines(total: EvalbSummary) -> list[str]:
    valid = total.valid
    f1 = f"{total.f1:6.2f}" if total.recall + total.precision else "  -nan"

    def per_sentence(count: float, scale: float = 100.0) -> str:
        return f"{scale * count / valid if valid else 0.0:6.2f}"

    return [
        f"Number of sentence        = {total.sentences:6d}",
        f"Number of Error sentence  = {total.errors:6d}",
        f"Number of Skip  sentence  = {total.skipped:6d}",
        f"Number of Valid sentence  = {valid:6d}",
        f"Bracketing Recall         = {total.recall:6.2f}",
        f"Bracketing Precision      = {total.precision:6.2f}",
        f"Bracketing FMeasure       = {f1}",
        f"Complete match            = {total.complete_match_percent:6.2f}",
        f"Average crossing          = {per_sentence(total.crossing, 1.0)}",
        f"No crossing               = {per_sentence(total.no_crossing)}",
        f"2 or less crossing        = {per_sentence(total.two_or_less_crossing)}",
        f"Tagging accuracy          = {total.tagging_accuracy:6.2f}",
    ]


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0
