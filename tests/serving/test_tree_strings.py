"""The in-graph trees of an exported parser equal ParsingProblem.output_trees byte for byte."""

from __future__ import annotations

import random

import pytest
import tensorflow as tf

from t2t_keras.data import trees
from t2t_keras.data.parsing_problem import PTB_LABELS, ParsingProblem
from t2t_keras.serving.tree_strings import (
    PYTHON_WHITESPACE,
    escaped_words,
    model_inputs,
    output_tags,
    output_trees,
)

WORDS = [
    *("The", "cat", "sat", "on", "mat", "Mr.", "f(x)", "(a)", "a)b", "\u00fcnd", "\u65e5\u672c"),
    *("-LRB-", "XX", "'", "`", "'"),
    *trees.PUNCTUATION_TAGS,
    *trees.PTB_ESCAPES,
]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\u3000", "\xa0", "\x1c", "\u2029"]


def random_source(rng: random.Random, count: int) -> str:
    words = [rng.choice(WORDS) for _ in range(count)]
    pieces = [rng.choice(["", " ", "\n"])]
    for word in words:
        pieces += [word, rng.choice(SEPARATORS)]
    return "".join(pieces)


def random_tree(rng: random.Random, leaves: int) -> str:
    """A random linearized tree of exactly `leaves` XX (at least one), as the search writes."""

    def constituent(count: int, depth: int) -> list[str]:
        label = rng.choice(PTB_LABELS)
        children: list[list[str]] = []
        while count:
            if depth < 6 and count > 0 and rng.random() < 0.4:
                size = rng.randint(1, count)
                children.append(constituent(size, depth + 1))
                count -= size
            else:
                children.append([trees.POS_PLACEHOLDER])
                count -= 1
        return [f"({label}", *(token for child in children for token in child), f"){label}"]

    return " ".join(constituent(leaves, 0))


def in_graph(sources: list[str], outputs: list) -> list:
    result = output_trees(tf.constant(sources), tf.constant(outputs)).numpy().tolist()
    return [[t.decode() for t in row] if isinstance(row, list) else row.decode() for row in result]


def test_whitespace_is_what_python_splits_on() -> None:
    assert "".join(chr(c) for c in range(0x110000) if chr(c).isspace()) == PYTHON_WHITESPACE


@pytest.mark.parametrize("seed", range(3))
def test_trees_equal_output_trees_of_many_random_cases(seed: int) -> None:
    rng = random.Random(seed)
    sources, outputs = [], []
    for _ in range(60):
        count = rng.choice([0, 1, 2, 3, 5, 8, 13])
        sources.append(random_source(rng, count))
        # Mostly the words' count; sometimes cut (N' < W, or no tree) or too many (N' > W).
        leaves = rng.choice([count] * 4 + [max(count - 2, 0), 0, count + 2])
        outputs.append(random_tree(rng, leaves) if leaves else "")
    expected, _ = ParsingProblem.output_trees(sources, outputs)
    assert in_graph(sources, outputs) == expected
    for source, tree in zip(sources, expected, strict=True):
        if tree:
            assert trees.parse_tree(tree).words() == trees.escape_words(source)


def test_words_tags_and_model_inputs_follow_the_python_rules() -> None:
    sources = ["a ` b ' c ' d '' e", " f(x)\u3000( ) {\t} [ ] ", "", "\x1c \xa0"]
    words = escaped_words(tf.constant(sources))
    assert [[w.decode() for w in row] for row in words.to_list()] == [
        trees.escape_words(source) for source in sources
    ]
    tags = output_tags(words).to_list()
    assert [[t.decode() for t in row] for row in tags] == [
        trees.output_tags(trees.escape_words(source)) for source in sources
    ]
    problem = ParsingProblem()
    joined = [text.decode() for text in model_inputs(tf.constant(sources)).numpy()]
    assert joined == [problem.model_input(source) for source in sources]


def test_beams_keep_their_shape_and_each_is_its_sources_tree() -> None:
    rng = random.Random(7)
    sources = [random_source(rng, count) for count in (4, 0, 1)]
    outputs = [
        [random_tree(rng, max(len(trees.escape_words(s)), 1)) for _ in range(3)] for s in sources
    ]
    result = in_graph(sources, outputs)
    assert [len(row) for row in result] == [3, 3, 3]
    for source, row, got in zip(sources, outputs, result, strict=True):
        assert got == ParsingProblem.output_trees([source] * 3, row)[0]
    assert result[1] == ["", "", ""]


def test_an_empty_batch_and_invalid_utf8_are_taken() -> None:
    empty = output_trees(tf.constant([], tf.string), tf.constant([], tf.string))
    assert empty.shape == [0]
    (tree,) = output_trees(tf.constant([b"a \xff b"]), tf.constant(["(S XX XX XX )S"])).numpy()
    assert tree == b"(TOP (S (XX a) (XX \xff) (XX b)))"
    # A lone surrogate as a lenient encoder writes it: bytes that are not UTF-8 either.
    surrogate = "(\ud800)".encode("utf-8", "surrogatepass")
    assert model_inputs(tf.constant([surrogate])).numpy().tolist() == [b"-LRB-\xed\xa0\x80-RRB-"]
    (tree,) = output_trees(tf.constant([surrogate]), tf.constant(["(S XX )S"])).numpy()
    assert tree == b"(TOP (S (XX -LRB-\xed\xa0\x80-RRB-)))"


def test_the_function_traces_with_unknown_shapes() -> None:
    traced = tf.function(output_trees, input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    (tree,) = traced(tf.constant(["The cat ."]), tf.constant(["(S (NP XX XX )NP XX )S"])).numpy()
    assert tree == b"(TOP (S (NP (XX The) (XX cat)) (. .)))"
