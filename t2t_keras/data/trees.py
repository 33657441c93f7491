"""Penn Treebank trees for parsing as translation (Vinyals & Kaiser et al. 2015).

A sentence's words are the input; the target is its tree, linearized with
part-of-speech tags normalized to XX and every closing bracket labelled:

    (S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP chairman)) (. .))
    -> words   "Mr. Vinken is chairman ."
    -> target  "(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"

Trees are cleaned first, as is usual for parsing: empty elements (-NONE-) and
the constituents they leave empty are removed, function tags and indices are
dropped (NP-SBJ-1 -> NP), and the unlabelled outer bracket goes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator

POS_PLACEHOLDER = "XX"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
# Labels that are brackets themselves and keep their dashes.
_BRACKET_LABELS = frozenset({"-LRB-", "-RRB-", "-LCB-", "-RCB-", "-NONE-"})


@dataclasses.dataclass
class Tree:
    """A constituent (children are Trees) or a preterminal (one word, no children)."""

    label: str
    children: list[Tree] = dataclasses.field(default_factory=list)
    word: str | None = None

    def words(self) -> list[str]:
        """The leaves, left to right."""
        if self.word is not None:
            return [self.word]
        return [word for child in self.children for word in child.words()]

    def __str__(self) -> str:
        if self.word is not None:
            return f"({self.label} {self.word})"
        return f"({self.label} {' '.join(str(child) for child in self.children)})"


class TreeError(ValueError):
    """A bracketed tree that does not parse."""


def read_trees(lines: Iterable[str]) -> Iterator[str]:
    """Bracketed trees from text where a tree may span lines, one string per tree."""
    depth, parts = 0, []
    for line in lines:
        for token in _TOKEN.findall(line):
            if depth == 0 and token != "(":
                raise TreeError(f"Text outside a tree: {token!r}.")
            parts.append(token)
            depth += {"(": 1, ")": -1}.get(token, 0)
            if depth == 0:
                yield _joined(parts)
                parts = []
    if parts:
        raise TreeError(f"An unfinished tree at the end: {_joined(parts)[:80]!r}.")


def _joined(tokens: list[str]) -> str:
    return " ".join(tokens).replace("( ", "(").replace(" )", ")")


def parse_tree(text: str) -> Tree:
    """Parses one bracketed tree; an unlabelled outer bracket "( (S ...) )" is removed."""
    tokens = _TOKEN.findall(text)
    tree, end = _parse(tokens, 0, text)
    if end != len(tokens):
        raise TreeError(f"Text after the tree: {text[:80]!r}.")
    while tree.label == "" and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def _parse(tokens: list[str], start: int, text: str) -> tuple[Tree, int]:
    if start >= len(tokens) or tokens[start] != "(":
        raise TreeError(f"Expected '(' in {text[:80]!r}.")
    position = start + 1
    label = ""
    if position < len(tokens) and tokens[position] not in "()":
        label, position = tokens[position], position + 1
    if position + 1 < len(tokens) and tokens[position] not in "()" and tokens[position + 1] == ")":
        return Tree(label, word=tokens[position]), position + 2
    children = []
    while position < len(tokens) and tokens[position] == "(":
        child, position = _parse(tokens, position, text)
        children.append(child)
    if position >= len(tokens) or tokens[position] != ")":
        raise TreeError(f"Unbalanced brackets in {text[:80]!r}.")
    return Tree(label, children), position + 1


def clean(tree: Tree) -> Tree | None:
    """The tree without empty elements, function tags and indices; None if nothing is left."""
    if tree.word is not None:
        return None if tree.label == "-NONE-" else Tree(_base_label(tree.label), word=tree.word)
    children = [kept for child in tree.children if (kept := clean(child)) is not None]
    return Tree(_base_label(tree.label), children) if children else None


def _base_label(label: str) -> str:
    if label in _BRACKET_LABELS:
        return label
    return re.split(r"[-=]", label)[0] or label


def linearize(tree: Tree) -> str:
    """The target sequence: POS tags as XX, closing brackets labelled."""
    if tree.word is not None:
        return POS_PLACEHOLDER
    inside = " ".join(linearize(child) for child in tree.children)
    return f"({tree.label} {inside} ){tree.label}"


def delinearize(target: str, words: list[str]) -> str:
    """A bracketed tree from a linearized target and the sentence's words.

    Each XX takes the next word under the tag XX. Closing brackets close the
    innermost open constituent whatever their label; brackets left open are
    closed at the end, and extra closing brackets are ignored, so any model
    output gives a tree (scoring then judges it).
    """
    out, depth, remaining = [], 0, iter(words)
    for token in target.split():
        if token.startswith("("):
            out.append(f"({token[1:]}")
            depth += 1
        elif token.startswith(")"):
            if depth:
                out.append(")")
                depth -= 1
        else:
            word = next(remaining, None)
            if word is not None:
                out.append(f"({POS_PLACEHOLDER} {word})")
    return " ".join([*out, *")" * depth]).replace(" )", ")")
