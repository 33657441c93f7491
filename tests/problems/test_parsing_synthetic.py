"""parsing_synthetic's grammar: well-formed trees over their words, 3-15 words, one tree
per sentence (brackets decided by the words), held-out splits, deterministic."""

from __future__ import annotations

import collections
import random

from t2t_keras import registry
from t2t_keras.data.trees import linearize, parse_tree
from t2t_keras.problems.parsing_synthetic import (
    MAX_WORDS,
    MIN_WORDS,
    WORD_CLASSES,
    sentence,
    split_trees,
)


def test_no_word_is_in_two_classes() -> None:
    words = [word for class_words in WORD_CLASSES.values() for word in class_words]
    assert len(words) == len(set(words))


def test_trees_are_well_formed_over_their_words_and_3_to_15_long() -> None:
    rng = random.Random(0)
    tag_of = {word: tag for tag, words in WORD_CLASSES.items() for word in words}
    lengths: collections.Counter[int] = collections.Counter()
    for _ in range(2000):
        tree = sentence(rng)
        reread = parse_tree(str(tree))  # Balanced, no empty constituent, one tree.
        assert reread == tree
        assert all(tag_of[word] == tag for word, tag in tree.tagged_words())
        words = tree.words()
        lengths[len(words)] += 1
        assert linearize(tree).split().count("XX") == len(words)
        assert words[-1] == "."
    assert set(lengths) == set(range(MIN_WORDS, MAX_WORDS + 1))  # Every length occurs.


def test_the_tree_is_a_function_of_the_words() -> None:
    # Every word has one tag, so one tree per tag sequence means one tree per word
    # sequence; tag sequences repeat far more often than sentences do, so this
    # compares many sentences of the same shape, long ones included.
    rng = random.Random(1)
    shapes: dict[tuple[str, ...], set[str]] = collections.defaultdict(set)
    seen: collections.Counter[tuple[str, ...]] = collections.Counter()
    for _ in range(20_000):
        tree = sentence(rng)
        tags = tuple(tag for _, tag in tree.tagged_words())
        shapes[tags].add(linearize(tree))
        seen[tags] += 1
    ambiguous = {tags: trees for tags, trees in shapes.items() if len(trees) > 1}
    assert not ambiguous, next(iter(ambiguous.items()))
    repeated_long = [tags for tags, count in seen.items() if count > 1 and len(tags) >= 10]
    assert len(repeated_long) > 100


def test_splits_are_disjoint_seeded_and_independent_of_later_sizes() -> None:
    drawn = split_trees("seed", {"train": 500, "dev": 50, "test": 50})
    sentences = {split: [tuple(tree.words()) for tree in trees] for split, trees in drawn.items()}
    assert {split: len(set(words)) for split, words in sentences.items()} == {
        "train": 500,
        "dev": 50,
        "test": 50,
    }
    assert not set(sentences["test"]) & (set(sentences["train"]) | set(sentences["dev"]))
    assert not set(sentences["dev"]) & set(sentences["train"])
    again = split_trees("seed", {"train": 10, "dev": 50, "test": 50})
    assert again["test"] == drawn["test"] and again["dev"] == drawn["dev"]
    assert split_trees("other", {"test": 50})["test"] != drawn["test"]


def test_samples_are_words_linearized_tree_and_gold_tree() -> None:
    problem = registry.problem("parsing_synthetic")
    sample = next(iter(problem.generate_samples("", "", "test")))
    gold = parse_tree(sample["reference"])
    assert gold.label == "TOP"
    assert sample["inputs"] == " ".join(gold.words())
    assert sample["targets"] == linearize(gold.children[0])
