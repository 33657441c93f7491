"""Labeled bracket scores of PTB trees, by the rules of EVALB with COLLINS.prm.

The rules (EVALB's README, section 7, with COLLINS.prm's settings):
  - Words whose *gold* POS tag is in DELETE_LABELS (traces and the
    punctuation tags , : `` '' .) are removed from both trees; constituents
    left dominating nothing are removed with them. Bracket spans count the
    remaining words.
  - Constituents labeled TOP (or ROOT, or an empty label: the outer bracket
    of a tree file) are not scored; their children are.
  - Function tags are stripped: NP-SBJ and NP=2 are NP (labels starting with
    "-", such as -NONE-, are kept as they are). PRT counts as ADVP.
  - Precision and recall compare the brackets (label, start, end) as
    multisets: n gold and m test copies of one bracket match min(n, m) times.
  - A sentence whose words differ between gold and test is an error: it is
    counted, reported, and left out of every score.
  - A sentence's length counts its words except traces (-NONE-), punctuation
    included; the `<= 40` summary keeps sentences of at most 40.
  - Tagging accuracy counts the words that are not deleted.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

DELETE_LABELS = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
DELETE_FOR_LENGTH = frozenset({"-NONE-"})
EQUAL_LABELS = {"PRT": "ADVP"}
WRAPPER_LABELS = frozenset({"", "TOP", "ROOT"})
CUTOFF_LENGTH = 40

Bracket = tuple[str, int, int]  # (label, first word, one past the last word)


class TreeError(ValueError):
    """A line that is not one well-formed PTB tree."""


@dataclasses.dataclass
class Tree:
    """A constituent: its label and children; a preterminal has one `str` child, its word."""

    label: str
    children: list[Tree | str]

    @property
    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def tagged_words(self) -> list[tuple[str, str]]:
        """(word, tag) of every leaf, left to right."""
        if self.is_preterminal:
            return [(str(self.children[0]), self.label)]
        return [
            pair
            for child in self.children
            if isinstance(child, Tree)
            for pair in child.tagged_words()
        ]


def parse_tree(text: str) -> Tree:
    """One PTB-bracketed tree, e.g. "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat))))".

    Raises:
      TreeError: unbalanced brackets, a word outside a preterminal, or more than one tree.
    """
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    if not tokens:
        raise TreeError("an empty line is not a tree")
    tree, position = _parse(tokens, 0)
    if position != len(tokens):
        raise TreeError(f"text after the tree's closing bracket: {' '.join(tokens[position:])!r}")
    return tree


def _parse(tokens: list[str], position: int) -> tuple[Tree, int]:
    if tokens[position] != "(":
        raise TreeError(f"expected '(' but found {tokens[position]!r}")
    position += 1
    label = ""
    if position < len(tokens) and tokens[position] not in "()":
        label, position = tokens[position], position + 1
    children: list[Tree | str] = []
    while position < len(tokens) and tokens[position] != ")":
        if tokens[position] == "(":
            child, position = _parse(tokens, position)
            children.append(child)
        else:
            children.append(tokens[position])
            position += 1
    if position >= len(tokens):
        raise TreeError("a bracket is never closed")
    words = [child for child in children if isinstance(child, str)]
    if words and len(children) > 1:
        raise TreeError(f"word(s) {words} beside constituents under {label!r}")
    if not children:
        raise TreeError(f"an empty constituent {label!r}")
    return Tree(label, children), position + 1


def scoring_label(label: str) -> str:
    """The label EVALB compares: function tags stripped, PRT as ADVP."""
    if not label.startswith("-"):
        label = label.split("-")[0].split("=")[0]
    return EQUAL_LABELS.get(label, label)


@dataclasses.dataclass
class BracketCounts:
    """Brackets in gold and test and those matched, crossing brackets, tags right of words."""

    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0


@dataclasses.dataclass
class SentenceScore(BracketCounts):
    """One sentence's counts and length, or its error."""

    length: int = 0
    error: str | None = None


def score_sentence(gold: Tree, test: Tree) -> SentenceScore:
    """EVALB's per-sentence counts of `test` against `gold` (see the module docstring)."""
    gold_words, test_words = gold.tagged_words(), test.tagged_words()
    if [w for w, _ in gold_words] != [w for w, _ in test_words]:
        return SentenceScore(error=_word_error(gold_words, test_words))
    kept = [tag not in DELETE_LABELS for _, tag in gold_words]
    gold_set = _brackets(gold, kept)
    test_set = _brackets(test, kept)
    tags = [
        (g, t) for (_, g), (_, t), keep in zip(gold_words, test_words, kept, strict=True) if keep
    ]
    return SentenceScore(
        length=sum(tag not in DELETE_FOR_LENGTH for _, tag in gold_words),
        gold_brackets=sum(gold_set.values()),
        test_brackets=sum(test_set.values()),
        matched=sum((gold_set & test_set).values()),
        crossing=sum(count for bracket, count in test_set.items() if _crosses(bracket, gold_set)),
        words=len(tags),
        correct_tags=sum(g == t for g, t in tags),
    )


def _word_error(gold: list[tuple[str, str]], test: list[tuple[str, str]]) -> str:
    if len(gold) != len(test):
        return f"length mismatch: {len(gold)} gold words, {len(test)} test words"
    index = next(i for i, (g, t) in enumerate(zip(gold, test, strict=True)) if g[0] != t[0])
    return f"word mismatch at word {index + 1}: gold {gold[index][0]!r}, test {test[index][0]!r}"


def _brackets(tree: Tree, kept: list[bool]) -> collections.Counter[Bracket]:
    """The scored brackets of `tree` over the kept words."""
    # positions[i]: kept words before word i, so spans count kept words only.
    positions = [0]
    for keep in kept:
        positions.append(positions[-1] + keep)
    found: collections.Counter[Bracket] = collections.Counter()

    def visit(node: Tree, first: int) -> int:
        """Adds node's brackets; returns one past its last word."""
        if node.is_preterminal:
            return first + 1
        end = first
        for child in node.children:
            assert isinstance(child, Tree)
            end = visit(child, end)
        start, stop = positions[first], positions[end]
        if stop > start and node.label not in WRAPPER_LABELS and node.label not in DELETE_LABELS:
            found[(scoring_label(node.label), start, stop)] += 1
        return end

    visit(tree, 0)
    return found


def _crosses(bracket: Bracket, gold: collections.Counter[Bracket]) -> bool:
    _, start, end = bracket
    return any(
        (g_start < start < g_end < end) or (start < g_start < end < g_end)
        for _, g_start, g_end in gold
    )


@dataclasses.dataclass
class EvalbSummary(BracketCounts):
    """EVALB's summary over sentences (all, or those of at most 40 words)."""

    sentences: int = 0
    errors: int = 0
    complete_match: int = 0

    def add(self, score: SentenceScore) -> None:
        self.sentences += 1
        if score.error:
            self.errors += 1
            return
        for field in dataclasses.fields(BracketCounts):
            setattr(self, field.name, getattr(self, field.name) + getattr(score, field.name))
        self.complete_match += score.matched == score.gold_brackets == score.test_brackets

    @property
    def recall(self) -> float:
        return _percent(self.matched, self.gold_brackets)

    @property
    def precision(self) -> float:
        return _percent(self.matched, self.test_brackets)

    @property
    def f1(self) -> float:
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0

    @property
    def tagging_accuracy(self) -> float:
        return _percent(self.correct_tags, self.words)

    @property
    def complete_match_percent(self) -> float:
        return _percent(self.complete_match, self.sentences - self.errors)


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
    """(summary of all sentences, of those of at most CUTOFF_LENGTH words); errors count in both."""
    everything, short = EvalbSummary(), EvalbSummary()
    for score in scores:
        everything.add(score)
        if score.error or score.length <= CUTOFF_LENGTH:
            short.add(score)
    return everything, short


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0
