"""A generated toy treebank: constituency parsing that learns in minutes, no download.

Sentences of 3-15 words (the final "." counted) from a small English grammar
whose brackets follow from the words alone. Every word belongs to exactly one
class (`WORD_CLASSES`), and the classes decide the tree:

    NP    a name, or a determiner, adjectives and a noun; a noun phrase may take
          one modifier: a PP (preposition + NP) or a relative clause
          (relative pronoun + VP), inside the noun's NP: (NP the dog (PP near (NP ...)))
    VP    an optional adverb, then a transitive verb and its object NP, or an
          intransitive verb and an optional PP
    S     NP VP, or two of them joined by a conjunction, then "."

    "the old dog near a cat that sleeps often sees Alice ."
    -> (S (NP XX XX XX (PP XX (NP XX XX (SBAR (WHNP XX )WHNP (S (VP XX )VP )S
          )SBAR )NP )PP )NP (VP (ADVP XX )ADVP XX (NP XX )NP )VP XX )S

No sentence has two trees: a PP after a noun belongs to that noun (a VP takes
one only after an intransitive verb, where no noun precedes it), a noun takes
one modifier so what follows it belongs further in, adverbs come before their
verb, and conjunctions join whole sentences only. A parser can thus reach
100% bracket F1; a tiny Transformer reaches 95-98% on held-out sentences
after 200 steps (tests/problems/test_parsing_learns.py has the recipe):
it learns the classes from the words, the brackets from the classes, and one
XX per word.

    t2t-datagen --problem=parsing_synthetic --data_dir=DATA --tmp_dir=TMP
    t2t-trainer --problem=parsing_synthetic --hparams_set=transformer_tiny \
        --hparams=layer_norm_position=pre,shared_embeddings=false,leaf_words=true,\
    learning_rate=0.5,warmup_steps=100 \
        --data_dir=DATA --output_dir=TRAIN --train_steps=200

Splits are drawn from one seeded generator, test first, then dev, then train,
and no sentence is drawn twice: dev and test sentences are never trained on.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data import ParsingProblem
from t2t_keras.data.text_problem import Sample
from t2t_keras.data.trees import Tree, linearize

# Verbs: the tag VBZ for both, but the word decides whether an object follows.
_TRANSITIVE_VERBS = (
    "sees likes follows finds helps visits paints watches greets calls meets knows "
    "loves admires remembers carries chases builds reads hears"
)
_INTRANSITIVE_VERBS = (
    "sleeps runs waits smiles laughs sings dances falls swims works rests travels shines "
    "listens wanders"
)
_WORDS = {
    "DT": "the a every some this no each another one any",
    "JJ": "old young small big red green happy quiet brave clever lazy busy tall short "
    "bright dark calm proud shy kind cold warm strange famous tiny gentle wild hungry "
    "noisy honest",
    "NN": "dog cat bird horse farmer teacher child doctor river garden house tree city "
    "king queen student baker sailor painter village forest bridge castle tower window "
    "lamp table boat road market island mountain lake singer pilot judge poet clock "
    "wolf fox owl",
    "NNP": "Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Leo Maria Nina "
    "Oscar Paula Quinn Rosa Sam Tina Victor Wendy Paris London Rome Berlin Oslo Vienna "
    "Madrid Lisbon",
    "IN": "in on near under behind with from above beside without inside around across beyond",
    "VBZ": f"{_TRANSITIVE_VERBS} {_INTRANSITIVE_VERBS}",
    "RB": "often never quickly slowly always rarely quietly suddenly gladly sometimes "
    "usually seldom loudly softly proudly",
    "WDT": "that which who",
    "CC": "and but or yet",
    ".": ".",
}
# Part-of-speech tag -> its words. No word is in two classes: the tree is a
# function of the words because it is a function of their tags.
WORD_CLASSES = {tag: tuple(words.split()) for tag, words in _WORDS.items()}
TRANSITIVE = tuple(_TRANSITIVE_VERBS.split())
INTRANSITIVE = tuple(_INTRANSITIVE_VERBS.split())
MIN_WORDS, MAX_WORDS = 3, 15
# Noun phrases nested deeper than this take no modifier: the sentence would
# mostly be too long anyway, and drawing it only to reject it costs time.
_MAX_NP_DEPTH = 3


def _leaf(rng: random.Random, tag: str, words: tuple[str, ...] | None = None) -> Tree:
    return Tree(tag, word=rng.choice(words or WORD_CLASSES[tag]))


def noun_phrase(rng: random.Random, depth: int = 0) -> Tree:
    """A name or DT JJ* NN, with at most one modifier: a PP or a relative clause."""
    if rng.random() < 0.25:
        head = Tree("NP", [_leaf(rng, "NNP")])
    else:
        adjectives = rng.choices((0, 1, 2), weights=(5, 3, 1))[0]
        head = Tree(
            "NP",
            [_leaf(rng, "DT"), *(_leaf(rng, "JJ") for _ in range(adjectives)), _leaf(rng, "NN")],
        )
    roll = rng.random()
    if depth >= _MAX_NP_DEPTH or roll >= 0.45:
        return head
    if roll < 0.25:
        modifier = Tree("PP", [_leaf(rng, "IN"), noun_phrase(rng, depth + 1)])
    else:
        relative = Tree("WHNP", [_leaf(rng, "WDT")])
        modifier = Tree("SBAR", [relative, Tree("S", [verb_phrase(rng, depth + 1)])])
    # The modifier goes inside the noun's NP, not beside it in an NP above
    # (PTB's adjunction): brackets then open where their first word is read.
    return Tree("NP", [*head.children, modifier])


def verb_phrase(rng: random.Random, depth: int = 0) -> Tree:
    """(adverb) transitive verb + NP, or (adverb) intransitive verb (+ PP)."""
    children = [Tree("ADVP", [_leaf(rng, "RB")])] if rng.random() < 0.2 else []
    if rng.random() < 0.55:
        children += [_leaf(rng, "VBZ", TRANSITIVE), noun_phrase(rng, depth)]
    else:
        children.append(_leaf(rng, "VBZ", INTRANSITIVE))
        if rng.random() < 0.4:
            children.append(Tree("PP", [_leaf(rng, "IN"), noun_phrase(rng, depth)]))
    return Tree("VP", children)


def sentence(rng: random.Random) -> Tree:
    """One tree of MIN_WORDS..MAX_WORDS words (drawn again until its length fits)."""
    while True:
        clauses = [Tree("S", [noun_phrase(rng), verb_phrase(rng)])]
        if rng.random() < 0.25:
            clauses += [_leaf(rng, "CC"), Tree("S", [noun_phrase(rng), verb_phrase(rng)])]
            tree = Tree("S", [*clauses, _leaf(rng, ".")])
        else:
            tree = Tree("S", [*clauses[0].children, _leaf(rng, ".")])
        if MIN_WORDS <= len(tree.words()) <= MAX_WORDS:
            return tree


def split_trees(seed: str, counts: dict[str, int]) -> dict[str, list[Tree]]:
    """counts[split] distinct sentences per split, none in two splits.

    Test is drawn first, then dev, then train, from one generator: a split's
    sentences do not depend on the sizes of the splits drawn after it.
    """
    rng = random.Random(seed)
    seen: set[tuple[str, ...]] = set()
    drawn: dict[str, list[Tree]] = {}
    for split in sorted(counts, key=("test", "dev", "train").index):
        drawn[split] = []
        while len(drawn[split]) < counts[split]:
            tree = sentence(rng)
            words = tuple(tree.words())
            if words not in seen:
                seen.add(words)
                drawn[split].append(tree)
    return drawn


# t2t-datagen asks for the training samples twice (vocabulary, shards) and for
# every split, and each needs the splits before it drawn: draw them once.
@functools.lru_cache(maxsize=2)
def _drawn(seed: str, counts: tuple[tuple[str, int], ...]) -> dict[str, list[Tree]]:
    return split_trees(seed, dict(counts))


@registry.register_problem
class ParsingSynthetic(ParsingProblem):
    """A generated toy treebank (3-15 words, brackets decided by word classes); no download."""

    approx_vocab_size = 400
    num_samples = {"train": 6000, "dev": 300, "test": 300}  # noqa: RUF012
    dataset_splits = {"train": 2, "dev": 1, "test": 1}  # noqa: RUF012

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        for tree in _drawn(self.data_name, tuple(self.num_samples.items()))[split]:
            yield {
                "inputs": " ".join(tree.words()),
                "targets": linearize(tree),
                "reference": str(Tree("TOP", [tree])),
            }
