"""Trees built without a model, the floor a parser's F1 must clear.

Both hang the words, tagged as a parser's output tags them
(`trees.output_tags`), under `TOP`, so that EVALB scores them exactly as it
scores our decoder's trees:

    flat             (TOP (S (XX The) (XX cat) (XX sat) (. .)))
    right-branching  (TOP (S (XX The) (S (XX cat) (S (XX sat) (. .)))))
"""

from __future__ import annotations

from collections.abc import Sequence

from t2t_keras.data.trees import Tree, escape_words, output_tags

# The label of every constituent the baselines build: the commonest of the treebank.
BASELINE_LABEL = "S"


def flat_tree(sentence: str) -> str:
    """One constituent over all the words; "" for a sentence without words."""
    leaves = _leaves(sentence)
    return str(Tree("TOP", [Tree(BASELINE_LABEL, leaves)])) if leaves else ""


def right_branching_tree(sentence: str) -> str:
    """Each word beside a constituent over the words after it; "" without words."""
    leaves = _leaves(sentence)
    if not leaves:
        return ""
    tree = Tree(BASELINE_LABEL, leaves[-2:])
    for leaf in reversed(leaves[:-2]):
        tree = Tree(BASELINE_LABEL, [leaf, tree])
    return str(Tree("TOP", [tree]))


def baseline_trees(sentences: Sequence[str]) -> dict[str, list[str]]:
    """{"flat": [...], "right_branching": [...]}: one tree per sentence of each kind."""
    return {
        "flat": [flat_tree(sentence) for sentence in sentences],
        "right_branching": [right_branching_tree(sentence) for sentence in sentences],
    }


def _leaves(sentence: str) -> list[Tree]:
    words = escape_words(sentence)
    return [Tree(tag, word=word) for word, tag in zip(words, output_tags(words), strict=True)]
