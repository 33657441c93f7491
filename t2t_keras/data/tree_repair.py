"""A parser's output back to a tree: always well formed, always exactly the input's words.

A model emits linearized trees (`t2t_keras.data.trees`), and nothing makes it
emit good ones. `output_tree` reads any output token by token and builds the
tree `(TOP (S (NP (XX The) (XX cat)) ...))` over the input's words, applying
these rules (each one's name is what `RepairCounts` counts):

  stray_token        a token that is neither "(LABEL", ")LABEL" nor XX is dropped
                     (a label is any text without spaces or round brackets), and
                     so is an opening bracket nested deeper than trees.MAX_DEPTH
  mismatched_close   a closing bracket closes the innermost open constituent,
                     whatever its label (or none) says
  extra_close        a closing bracket with nothing open is dropped
  extra_words        an XX after the input's last word is dropped
  missing_words      input words no XX took are added, in order, to the
                     innermost constituent still open at the end, or else to
                     the last top-level one (or under TOP if there is none)
  unclosed           constituents still open at the end are closed
  empty_constituent  a constituent holding no word is removed
  several_roots      more than one top-level constituent, or a word outside
                     every constituent: all of them are kept, under TOP
  no_tree            no constituent at all: the words hang from TOP directly

A well-formed output needs none of them, and comes back as the tree it
linearizes. The model predicts no part-of-speech tags: a word is tagged XX,
or, if it is punctuation, with the treebank's tag for it (`trees.output_tags`),
since EVALB decides which words it scores by each tree's own tags.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Iterable, Sequence

from t2t_keras.data.trees import MAX_DEPTH, POS_PLACEHOLDER, Tree, output_tags

ROOT_LABEL = "TOP"
RULES = (
    "stray_token",
    "mismatched_close",
    "extra_close",
    "extra_words",
    "missing_words",
    "unclosed",
    "empty_constituent",
    "several_roots",
    "no_tree",
)
_LABEL = re.compile(r"[^\s()]+")


@dataclasses.dataclass
class _Reading:
    """The state of reading one output: open constituents, top-level nodes, words used."""

    words: Sequence[str]
    tags: list[str]
    top: list[Tree] = dataclasses.field(default_factory=list)
    open: list[Tree] = dataclasses.field(default_factory=list)
    used: int = 0
    repairs: set[str] = dataclasses.field(default_factory=set)

    def add(self, node: Tree) -> None:
        (self.open[-1].children if self.open else self.top).append(node)

    def read(self, token: str) -> None:
        if token == POS_PLACEHOLDER:
            if self.used < len(self.words):
                self.add(self._leaf(self.used))
                self.used += 1
            else:
                self.repairs.add("extra_words")
        elif token.startswith("(") and _LABEL.fullmatch(token[1:]) and self._room():
            node = Tree(token[1:], [])
            self.add(node)
            self.open.append(node)
        elif token == ")" or (token.startswith(")") and _LABEL.fullmatch(token[1:])):
            if not self.open:
                self.repairs.add("extra_close")
            elif self.open.pop().label != token[1:]:
                self.repairs.add("mismatched_close")
        else:
            self.repairs.add("stray_token")

    def finish(self) -> Tree:
        if self.used < len(self.words):
            self.repairs.add("missing_words")
            last = self.top[-1] if self.top and not self.top[-1].is_preterminal else None
            home = self.open[-1] if self.open else last
            leaves = [self._leaf(index) for index in range(self.used, len(self.words))]
            (home.children if home else self.top).extend(leaves)
        if self.open:
            self.repairs.add("unclosed")
        top = [kept for node in self.top if (kept := self._pruned(node)) is not None]
        if not any(not node.is_preterminal for node in top):
            self.repairs.add("no_tree")
        elif len(top) > 1:
            self.repairs.add("several_roots")
        return Tree(ROOT_LABEL, top)

    def _room(self) -> bool:
        """Whether a constituent may open here: TOP and a preterminal go around and below it."""
        return len(self.open) + 2 < MAX_DEPTH

    def _leaf(self, index: int) -> Tree:
        return Tree(self.tags[index], word=self.words[index])

    def _pruned(self, node: Tree) -> Tree | None:
        if node.is_preterminal:
            return node
        children = [kept for child in node.children if (kept := self._pruned(child)) is not None]
        if not children:
            self.repairs.add("empty_constituent")
            return None
        return Tree(node.label, children)


def output_tree(output: str, words: Sequence[str]) -> tuple[Tree, set[str]]:
    """The tree of one model output over `words`, and the names of the rules it needed.

    Args:
      output: the model's linearized tree, e.g. "(S (NP XX XX )NP (VP XX )VP )S".
      words: the input's words (at least one), brackets escaped (-LRB-, ...).

    Returns:
      (the tree under TOP, whose leaves are exactly `words`; the repairs applied).
    """
    reading = _Reading(words, output_tags(words))
    for token in output.split():
        reading.read(token)
    return reading.finish(), reading.repairs


@dataclasses.dataclass
class RepairCounts:
    """How many outputs were read, how many needed repair, and how often each rule applied."""

    outputs: int = 0
    repaired: int = 0
    rules: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)

    def add(self, repairs: Iterable[str]) -> None:
        repairs = set(repairs)
        self.outputs += 1
        self.repaired += bool(repairs)
        self.rules.update(repairs)

    def __str__(self) -> str:
        if not self.repaired:
            return f"{self.outputs} output trees, none repaired"
        rules = ", ".join(f"{name} {self.rules[name]}" for name in RULES if self.rules[name])
        return f"{self.outputs} output trees, {self.repaired} repaired ({rules})"
