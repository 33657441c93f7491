"""Labeled bracket precision, recall and F1 (evalb-style) on linearized trees.

Parsing outputs and references are the targets of `t2t_keras.data.trees`:
`(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S`, where each XX is one word
(its part-of-speech tag hidden). A tree's brackets are its constituents as
(label, first word, end word) spans, counted in XX positions.

What is counted, following evalb's COLLINS.prm where it applies here:

- every labeled constituent, the root included; the unlabelled outer bracket
  (COLLINS.prm's TOP) is already gone from this format;
- preterminals are not brackets (they are the XX leaves);
- ADVP and PRT are the same label (COLLINS.prm's EQ_LABEL);
- brackets are a multiset: a unary chain with two equal (label, span) pairs
  needs two such brackets in the other tree to match both;
- punctuation is NOT deleted, unlike COLLINS.prm: its tags are hidden behind
  XX, so spans include punctuation words and scores are not directly
  comparable with evalb on full trees.

A malformed hypothesis (unbalanced brackets, a closing label that does not
match its opening one, an empty constituent, a token that is neither a
bracket nor XX, text outside the root, or a word count different from its
reference's) cannot be read reliably, so it proposes no brackets and matches
none: it lowers recall (its reference brackets still count) but not
precision. `BracketScore.malformed` says how many there were.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence

from t2t_keras.data.trees import POS_PLACEHOLDER
from t2t_keras.errors import UserError

Bracket = tuple[str, int, int]  # (label, first word, end word): words [first, end).

# COLLINS.prm's EQ_LABEL ADVP PRT: either label matches the other.
_EQUAL_LABELS = {"PRT": "ADVP"}


class MalformedTreeError(ValueError):
    """A linearized tree that does not read as one well-formed tree."""


@dataclasses.dataclass(frozen=True)
class BracketScore:
    """Labeled bracket scores over a corpus, evalb-style.

    Attributes:
      precision: matched / proposed brackets, in percent (0 when none proposed).
      recall: matched / reference brackets, in percent.
      f1: harmonic mean of precision and recall, in percent.
      matched: brackets of the hypotheses also in their reference.
      proposed: brackets of the well-formed hypotheses.
      gold: brackets of all references.
      sentences: hypotheses scored.
      malformed: hypotheses that did not read as trees (they propose nothing).
    """

    precision: float
    recall: float
    f1: float
    matched: int
    proposed: int
    gold: int
    sentences: int
    malformed: int

    def __str__(self) -> str:
        return (
            f"Bracket F1 = {self.f1:.2f} (precision {self.precision:.2f}, recall "
            f"{self.recall:.2f}; {self.malformed} of {self.sentences} outputs malformed)"
        )


def labeled_brackets(linearized: str) -> tuple[collections.Counter[Bracket], int]:
    """The constituents of one linearized tree and its word count.

    Args:
      linearized: e.g. "(S (NP XX XX )NP (VP XX )VP )S".

    Returns:
      A multiset of (label, first word, end word) brackets, with ADVP and PRT
      both counted as ADVP, and the number of XX words.

    Raises:
      MalformedTreeError: the text is not exactly one well-formed tree.
    """
    brackets: collections.Counter[Bracket] = collections.Counter()
    open_brackets: list[tuple[str, int]] = []  # (label, first word), innermost last.
    words, finished = 0, False
    for token in linearized.split():
        if finished:
            raise MalformedTreeError(f"{token!r} after the root's closing bracket.")
        if token == POS_PLACEHOLDER:
            if not open_brackets:
                raise MalformedTreeError("A word outside every bracket.")
            words += 1
        elif token.startswith("(") and len(token) > 1:
            open_brackets.append((token[1:], words))
        elif token.startswith(")") and len(token) > 1:
            _close(token[1:], open_brackets, words, brackets)
            finished = not open_brackets
        else:
            raise MalformedTreeError(f"{token!r} is neither '(LABEL', ')LABEL' nor a word.")
    if open_brackets or not finished:
        raise MalformedTreeError("Brackets left open at the end." if open_brackets else "No tree.")
    return brackets, words


def _close(
    label: str,
    open_brackets: list[tuple[str, int]],
    words: int,
    brackets: collections.Counter[Bracket],
) -> None:
    if not open_brackets:
        raise MalformedTreeError(f"')' + {label!r} closes no open bracket.")
    opened, first = open_brackets.pop()
    if opened != label:
        raise MalformedTreeError(f"({opened} is closed by ){label}.")
    if first == words:
        raise MalformedTreeError(f"({label} holds no word.")
    brackets[(_EQUAL_LABELS.get(label, label), first, words)] += 1


def bracket_f1(hypotheses: Sequence[str], references: Sequence[str]) -> BracketScore:
    """Corpus-level labeled bracket precision, recall and F1 of linearized trees.

    Args:
      hypotheses: model outputs, one linearized tree each.
      references: the reference trees, aligned with hypotheses.

    Returns:
      The scores in percent and the counts behind them.

    Raises:
      UserError: empty lists, different counts, or a malformed reference.
    """
    if len(hypotheses) != len(references):
        raise UserError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: bracket F1 "
            "needs exactly one reference tree per output, in the same order."
        )
    if not references:
        raise UserError(
            "No trees to score: bracket F1 needs at least one output and its reference."
        )
    matched = proposed = gold = malformed = 0
    for number, (hypothesis, reference) in enumerate(zip(hypotheses, references, strict=True)):
        gold_brackets, gold_words = _reference_brackets(reference, number + 1)
        gold += gold_brackets.total()
        try:
            test_brackets, test_words = labeled_brackets(hypothesis)
        except MalformedTreeError:
            test_brackets, test_words = None, None
        if test_brackets is None or test_words != gold_words:
            malformed += 1
            continue
        proposed += test_brackets.total()
        matched += (test_brackets & gold_brackets).total()
    precision = _percent(matched, proposed)
    recall = _percent(matched, gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BracketScore(precision, recall, f1, matched, proposed, gold, len(references), malformed)


def _reference_brackets(reference: str, number: int) -> tuple[collections.Counter[Bracket], int]:
    try:
        return labeled_brackets(reference)
    except MalformedTreeError as error:
        raise UserError(
            f"Reference tree {number} is not a linearized tree ({error}): references "
            "look like '(S (NP XX XX )NP (VP XX )VP )S'."
        ) from None


def _percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0
