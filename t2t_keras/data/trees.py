"""Penn Treebank trees: reading, cleaning, and linearizing for parsing as translation.

A sentence's words are the input; the target is its tree (Vinyals & Kaiser
et al. 2015), linearized with part-of-speech tags normalized to XX and every
closing bracket labelled:

    (S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .))
    -> words   "Mr. Vinken is chairman ."
    -> target  "(S (NP XX XX )NP (VP XX (NP XX )NP )VP XX )S"

Trees are cleaned first, as is usual for parsing: empty elements (-NONE-) and
the constituents they leave empty are removed, function tags and indices are
dropped (NP-SBJ-1 -> NP), and the outer bracket (empty, TOP or ROOT) goes.
`t2t_keras.data.tree_repair` turns a model's output back into a tree.

Words that are brackets are written as PTB writes them (-LRB-, -RRB-, ...),
so that every tree stays readable; `escape_words` does that to raw text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence

POS_PLACEHOLDER = "XX"
# Deepest nesting read: the treebank's trees stay under 40, EVALB takes 200
# brackets a sentence, and deeper text would exhaust Python's recursion.
MAX_DEPTH = 200
# Outer brackets that hold a tree but are not constituents of it.
WRAPPER_LABELS = frozenset({"", "TOP", "ROOT"})
# Words that would break a bracketed tree, as the Penn Treebank writes them.
PTB_ESCAPES = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}
# The Penn Treebank's tags of punctuation words, which EVALB deletes words by.
PUNCTUATION_TAGS = {
    ",": ",",
    ".": ".",
    "?": ".",
    "!": ".",
    "``": "``",
    "`": "``",
    "''": "''",
    "--": ":",
    "-": ":",
    ";": ":",
    ":": ":",
    "...": ":",
}
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_FUNCTION_TAG = re.compile(r"[-=].*")


class TreeError(ValueError):
    """Text that is not one well-formed bracketed tree."""


@dataclasses.dataclass
class Tree:
    """A constituent (children are Trees) or a preterminal (a tag and one word)."""

    label: str
    children: list[Tree] = dataclasses.field(default_factory=list)
    word: str | None = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def words(self) -> list[str]:
        """The leaves, left to right."""
        return [word for word, _ in self.tagged_words()]

    def tagged_words(self) -> list[tuple[str, str]]:
        """(word, tag) of every leaf, left to right."""
        if self.word is not None:
            return [(self.word, self.label)]
        return [pair for child in self.children for pair in child.tagged_words()]

    def __str__(self) -> str:
        if self.word is not None:
            return f"({self.label} {self.word})"
        return f"({self.label} {' '.join(str(child) for child in self.children)})"


def parse_tree(text: str) -> Tree:
    """One bracketed tree as written, e.g. "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat))))".

    Raises:
      TreeError: unbalanced brackets, a word beside constituents, an empty
        constituent, brackets nested deeper than MAX_DEPTH, or text after the tree.
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise TreeError("an empty line is not a tree")
    tree, end = _parse(tokens, 0, 1)
    if end != len(tokens):
        raise TreeError(f"text after the tree's last bracket: {' '.join(tokens[end:])[:60]!r}")
    return tree


def _parse(tokens: list[str], start: int, depth: int) -> tuple[Tree, int]:
    if tokens[start] != "(":
        raise TreeError(f"expected '(' but found {tokens[start]!r}")
    if depth > MAX_DEPTH:
        raise TreeError(f"brackets nested deeper than {MAX_DEPTH}")
    position, label = start + 1, ""
    if position < len(tokens) and tokens[position] not in "()":
        label, position = tokens[position], position + 1
    children: list[Tree] = []
    words: list[str] = []
    while position < len(tokens) and tokens[position] != ")":
        if tokens[position] == "(":
            child, position = _parse(tokens, position, depth + 1)
            children.append(child)
        else:
            words.append(tokens[position])
            position += 1
    if position >= len(tokens):
        raise TreeError("unbalanced brackets: a bracket is never closed")
    if words and (children or len(words) > 1):
        raise TreeError(f"word(s) {' '.join(words)!r} beside other children under {label!r}")
    if words:
        return Tree(label, word=words[0]), position + 1
    if not children:
        raise TreeError(f"an empty constituent {label!r}")
    return Tree(label, children), position + 1


def read_trees(lines: Iterable[str]) -> Iterator[tuple[int, Tree | TreeError]]:
    """(line number, tree or error) for each tree of a treebank file.

    A tree may span lines (the LDC .mrg layout) or take one line each. A '('
    in a line's first column begins a tree: a tree still open there is
    reported as unbalanced, and so is one still open at the end. A line with
    text outside any tree (a stray word, a closing bracket too many) is
    reported, and the trees it ends are dropped with it. Errors are yielded,
    not raised, so a reader can report them and go on.
    """
    tokens: list[str] = []
    start = 0
    for number, line in enumerate(lines, start=1):
        if tokens and line.startswith("("):
            yield (
                start,
                TreeError("unbalanced brackets: the tree is not closed where the next begins"),
            )
            tokens = []
        ended, error = [], None
        for token in _TOKEN.findall(line):
            if not tokens:
                if token != "(":
                    error = TreeError(f"{token!r} outside any tree (a closing bracket too many?)")
                    break
                start = number
            tokens.append(token)
            if token == ")" and tokens.count("(") == tokens.count(")"):
                ended.append((start, tokens))
                tokens = []
        if error is not None:
            yield number, error
            continue
        for first, tree_tokens in ended:
            yield first, _parsed(tree_tokens)
    if tokens:
        yield start, TreeError("unbalanced brackets: the file ends inside a tree")


def _parsed(tokens: list[str]) -> Tree | TreeError:
    try:
        return parse_tree(" ".join(tokens))
    except TreeError as error:
        return error


def unwrap(tree: Tree) -> Tree:
    """The tree without its outer bracket(s) labelled "", TOP or ROOT around one constituent."""
    while tree.label in WRAPPER_LABELS and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def clean(tree: Tree) -> Tree | None:
    """The unwrapped tree without empty elements, function tags and indices; None if empty."""
    return _cleaned(unwrap(tree))


def _cleaned(tree: Tree) -> Tree | None:
    if tree.word is not None:
        return None if tree.label == "-NONE-" else Tree(base_label(tree.label), word=tree.word)
    children = [kept for child in tree.children if (kept := _cleaned(child)) is not None]
    return Tree(base_label(tree.label), children) if children else None


def base_label(label: str) -> str:
    """The label without function tags and indices: NP-SBJ-1 and NP=2 are NP.

    A label that starts with a dash is a name (-NONE-, -LRB-) and stays whole.
    """
    return label if label.startswith("-") else _FUNCTION_TAG.sub("", label)


def linearize(tree: Tree) -> str:
    """The target sequence: POS tags as XX, closing brackets labelled."""
    if tree.word is not None:
        return POS_PLACEHOLDER
    inside = " ".join(linearize(child) for child in tree.children)
    return f"({tree.label} {inside} ){tree.label}"


def output_tags(words: Sequence[str]) -> list[str]:
    """The tags a parser's output gives its words: XX, except for punctuation.

    A punctuation word gets the tag the treebank gives it (`PUNCTUATION_TAGS`),
    so that EVALB, which deletes punctuation by each tree's own tags, keeps
    the same words of the output as of the gold tree. "'" closes a quote
    opened by "`" (tag ''), and is otherwise the possessive (tag POS).
    """
    tags, open_quotes = [], 0
    for word in words:
        if word == "'":
            tags.append("''" if open_quotes else "POS")
            open_quotes = max(open_quotes - 1, 0)
            continue
        open_quotes += word == "`"
        tags.append(PUNCTUATION_TAGS.get(word, POS_PLACEHOLDER))
    return tags


def escape_words(text: str) -> list[str]:
    """The whitespace-separated words of `text`, brackets written as the treebank does.

    A word that is a bracket becomes its PTB name ("(" -> -LRB-, "{" -> -LCB-,
    "[" -> -LSB-, and the closing ones); round brackets inside a word are
    replaced the same way ("f(x)" -> "f-LRB-x-RRB-"), as they would end a tree.
    """
    return [
        PTB_ESCAPES.get(word) or word.replace("(", "-LRB-").replace(")", "-RRB-")
        for word in text.split()
    ]
