"""The search constrained to trees: against brute-force enumeration, on random logits
(greedy and beam, XLA on and off), through the Decoder, and the vocabulary's tables.

A toy vocabulary: PAD, EOS, UNK, "(A" ")A" "(B" ")B" XX and a junk piece; the
inputs' word starts are 3..8, so a row's N is its count of those.
"""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf
from decoders import make_decoder
from eos_first import make_eos_first

from t2t_keras import registry
from t2t_keras.data import trees
from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.data.parsing_problem import PTB_LABELS, ParsingProblem
from t2t_keras.data.tree_repair import output_tree
from t2t_keras.data.tree_tokens import TreeTokens, tree_tokens
from t2t_keras.data.vocab import ByteVocabulary, SentencePieceVocabulary
from t2t_keras.models import TransformerHParams
from t2t_keras.search import beam_search, greedy_search, length_penalty
from t2t_keras.search.settings import DecodeHParams, SearchDefaults
from t2t_keras.search.tree_constraint import TreeConstraint, reorder, words

SYMBOLS = {3: "(A", 4: ")A", 5: "(B", 6: ")B", 7: "XX"}
JUNK = 8
VOCAB = 9
TOKENS = TreeTokens(
    open_ids=(3, 5),
    close_ids=(4, 6),
    leaf_id=7,
    word_start_ids=(3, 4, 5, 6, 7, 8),
    inputs_vocab_size=VOCAB,
)


def inputs_of(words: list[int], width: int | None = None) -> tf.Tensor:
    """[B, S] input rows of N word starts (and an UNK, which is not one) each."""
    rows = [[3 + i % 6 for i in range(n)] + [2, EOS_ID] for n in words]
    width = width or max(len(row) for row in rows)
    return tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])


def well_formed(sequence: tuple[int, ...], leaves: int, max_depth: int) -> bool:
    """Whether tokens (no EOS) are one linearized tree of exactly `leaves` XX, by the grammar."""

    def constituent(position: int, depth: int) -> int | None:
        """The position after the constituent starting at `position`, or None."""
        if depth > max_depth or position >= len(sequence) or sequence[position] not in (3, 5):
            return None
        label, position, children = sequence[position], position + 1, 0
        while position < len(sequence) and sequence[position] != label + 1:
            if sequence[position] == 7:
                position += 1
            elif (position := constituent(position, depth + 1)) is None:
                return None
            children += 1
        return position + 1 if position < len(sequence) and children else None

    return constituent(0, 1) == len(sequence) and sequence.count(7) == leaves


def valid_outputs(leaves: int, most_tokens: int, max_depth: int = 64) -> list[tuple[int, ...]]:
    """Every tree of `leaves` XX with at most most_tokens tokens, then EOS."""
    return [
        (*sequence, EOS_ID)
        for length in range(most_tokens + 1)
        for sequence in itertools.product(SYMBOLS, repeat=length)
        if well_formed(sequence, leaves, max_depth)
    ]


def constraint_for(leaves: int, most_tokens: int, max_depth: int = 64) -> TreeConstraint:
    return TreeConstraint(TOKENS, VOCAB, inputs_of([leaves]), tf.constant([most_tokens]), max_depth)


@pytest.mark.parametrize(
    ("leaves", "most_tokens", "max_depth"),
    [(0, 4, 64), (1, 3, 64), (1, 6, 64), (2, 6, 64), (3, 7, 64), (2, 7, 2), (2, 3, 64)],
)
def test_the_mask_allows_exactly_the_prefixes_of_valid_trees(
    leaves: int, most_tokens: int, max_depth: int
) -> None:
    """Level by level, every allowed prefix at once (as the beams of one sentence)."""
    fitting = min(leaves, most_tokens - 2)  # N is cut to what fits (N + 2 tokens at least).
    valid = valid_outputs(fitting, most_tokens, max_depth) if fitting else [(EOS_ID,)]
    constraint = constraint_for(leaves, most_tokens, max_depth)
    prefixes: list[tuple[int, ...]] = [()]
    state = constraint.start(1)
    for index in range(most_tokens + 1):
        allowed = constraint.allowed(state, tf.constant(index)).numpy()[0]  # [K, V]
        extensions = []
        for row, prefix in enumerate(prefixes):
            expected = {v[index] for v in valid if len(v) > index and v[:index] == prefix}
            assert set(np.flatnonzero(allowed[row])) == expected, prefix
            extensions += [(row, token) for token in sorted(expected) if token != EOS_ID]
        if not extensions:
            break
        parents = tf.constant([[row for row, _ in extensions]])
        state = constraint.advance(
            reorder(state, parents), tf.constant([[t for _, t in extensions]])
        )
        prefixes = [(*prefixes[row], token) for row, token in extensions]
    assert not extensions, "a prefix was still open at the length limit"


def prefix_step(table: tf.Tensor):
    """A step function whose logits depend on the whole prefix (a running hash of it)."""

    def step(state, index, previous, parents=None):
        if parents is not None:
            state = tf.gather(state, parents)
        state = (state * 31 + previous + 7) % table.shape[0]
        return tf.gather(table, state), state

    return step


def prefix_log_probs(table: np.ndarray, sequence: tuple[int, ...]) -> list[np.ndarray]:
    """The log-probabilities the prefix step gives before each token of `sequence`."""
    state, previous, out = 0, PAD_ID, []
    for token in sequence:
        state = (state * 31 + previous + 7) % table.shape[0]
        logits = table[state]
        out.append(logits - np.log(np.sum(np.exp(logits - logits.max()))) - logits.max())
        previous = token
    return out


@pytest.mark.parametrize(("leaves", "most_tokens"), [(1, 5), (2, 6), (3, 7)])
def test_greedy_and_wide_beam_find_the_brute_force_choices(leaves: int, most_tokens: int) -> None:
    table = np.random.default_rng(leaves).normal(0.0, 2.0, [97, VOCAB]).astype(np.float32)
    step = prefix_step(tf.constant(table))
    valid = valid_outputs(leaves, most_tokens)
    constraint = constraint_for(leaves, most_tokens)
    max_lengths = tf.constant([most_tokens])
    # Greedy: the best allowed token after each greedy prefix.
    prefix: tuple[int, ...] = ()
    while not prefix or prefix[-1] != EOS_ID:
        log_probs = prefix_log_probs(table, (*prefix, 0))[-1]
        allowed = {v[len(prefix)] for v in valid if v[: len(prefix)] == prefix}
        prefix = (*prefix, max(allowed, key=lambda token: log_probs[token]))
    ids, _ = greedy_search(
        step, tf.zeros([1], tf.int32), most_tokens + 1, max_lengths, 0.6, constraint=constraint
    )
    assert tuple(ids[0, 0, : len(prefix)].numpy()) == prefix
    # Beam: the best tree under the penalty, and every tree ranked (the beam holds them all).
    for alpha in (0.0, 1.0):
        ranked = sorted(
            (
                sum(lp[t] for lp, t in zip(prefix_log_probs(table, v), v, strict=True))
                / float(length_penalty(len(v), alpha)),
                v,
            )
            for v in valid
        )[::-1]
        ids, scores = beam_search(
            step,
            tf.zeros([64], tf.int32),
            64,
            most_tokens + 1,
            max_lengths,
            alpha,
            constraint=constraint,
            stopping="best_possible",
        )
        assert tuple(ids[0, 0, : len(ranked[0][1])].numpy()) == ranked[0][1]
        found = [score for score in scores[0].numpy() if np.isfinite(score)]
        np.testing.assert_allclose(found, [score for score, _ in ranked], rtol=1e-4)


def random_step(seed: int):
    """Random logits at each step (junk, UNK and PAD likely), the same for greedy and beam."""

    def step(state, index, previous, parents=None):
        rows = tf.shape(previous)[0]
        # The step count: the furthest sentence's position (each has its own).
        count = tf.reduce_max(index)
        logits = tf.random.stateless_normal([rows, VOCAB], seed=tf.stack([seed, count]))
        return logits * 3.0, state

    return step


def assert_trees(ids: np.ndarray, leaves: list[int]) -> None:
    """Each hypothesis of ids [B, N, L] is a tree of its sentence's leaves, needing no repair."""
    for row, count in zip(ids, leaves, strict=True):
        for hypothesis in row:
            tokens = list(hypothesis)
            body = tokens[: tokens.index(EOS_ID)]
            if count == 0:
                assert body == []
                continue
            text = " ".join(SYMBOLS[token] for token in body)
            tree, repairs = output_tree(text, [f"w{i}" for i in range(count)])
            assert not repairs, text
            assert trees.parse_tree(str(tree)).words() == [f"w{i}" for i in range(count)]


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("beam_size", [1, 4, 21])
def test_every_output_is_a_tree_of_its_inputs_words(jit_compile: bool, beam_size: int) -> None:
    leaves = [1, 4, 0, 7, 2]
    inputs = inputs_of(leaves)
    max_lengths = tf.constant([6, 12, 3, 30, 20])
    decode_length = 31

    @tf.function(jit_compile=jit_compile)
    def search(inputs, max_lengths):
        constraint = TreeConstraint(TOKENS, VOCAB, inputs, max_lengths)
        if beam_size == 1:
            return greedy_search(
                random_step(1), (), decode_length, max_lengths, 0.6, constraint=constraint
            )
        return beam_search(
            random_step(1),
            (),
            beam_size,
            decode_length,
            max_lengths,
            0.6,
            num_returned=beam_size,
            constraint=constraint,
        )

    ids, scores = (result.numpy() for result in search(inputs, max_lengths))
    assert np.all(np.isfinite(scores[:, 0]))
    for row, row_scores, count, limit in zip(ids, scores, leaves, max_lengths, strict=True):
        found = row[np.isfinite(row_scores)]  # A sentence may have fewer than K trees.
        assert all(list(hypothesis).index(EOS_ID) <= limit for hypothesis in found)
        assert_trees(found[np.newaxis], [count])


TINY = TransformerHParams(
    vocab_size=VOCAB + 3,
    num_encoder_layers=1,
    num_decoder_layers=1,
    d_model=16,
    d_ff=32,
    num_heads=2,
    d_k=8,
    d_v=8,
    max_length=24,
)


@pytest.fixture(scope="module")
def eos_first_model():
    """A tiny Transformer that always prefers EOS: only the constraint makes it write trees."""
    keras.utils.set_random_seed(3)
    model = registry.model("transformer")(TINY)
    model.build()
    make_eos_first(model)
    return model


@pytest.mark.parametrize("beam_size", [1, 3])
def test_the_decoder_writes_trees_and_only_when_asked(eos_first_model, beam_size: int) -> None:
    """N counted from the inputs' word starts; an N=0 row gives EOS at once; min_length
    never fights the constraint; tree_constraint=false decodes as without tables."""
    leaves = [2, 0, 5]
    inputs = inputs_of(leaves, width=8)
    constrained = make_decoder(
        eos_first_model, beam_size, min_length=4, tree_tokens=TOKENS, jit_compile=False
    )
    ids, scores = constrained(inputs)
    assert np.all(np.isfinite(scores.numpy()))
    assert_trees(ids.numpy(), leaves)
    assert list(ids.numpy()[1, 0, :1]) == [EOS_ID]
    plain = make_decoder(eos_first_model, beam_size, min_length=4, jit_compile=False)(inputs)
    off = make_decoder(
        eos_first_model,
        beam_size,
        min_length=4,
        tree_constraint=False,
        tree_tokens=TOKENS,
        jit_compile=False,
    )(inputs)
    np.testing.assert_array_equal(off[0], plain[0])
    np.testing.assert_array_equal(off[1], plain[1])
    assert not np.array_equal(ids.numpy(), plain[0].numpy())


def test_a_signature_of_unknown_shape_writes_trees(eos_first_model) -> None:
    """What the exported SavedModel runs: [None, None] inputs (XLA is tested above: on
    this model it compiles for a minute)."""
    leaves = [3, 1, 0]
    decoder = make_decoder(eos_first_model, 2, tree_tokens=TOKENS, jit_compile=False)
    signature = [tf.TensorSpec([None, None], tf.int32)]
    traced = tf.function(decoder._search_ids, input_signature=signature)
    ids, scores = traced(inputs_of(leaves))
    assert np.all(np.isfinite(scores.numpy()))
    assert_trees(ids.numpy(), leaves)


def test_decode_hparams_switch_the_constraint_off() -> None:
    assert DecodeHParams().tree_constraint is True
    settings = DecodeHParams().override("tree_constraint=false")
    assert settings.tree_constraint is False
    assert settings.resolve(SearchDefaults(4, 0.6, 50)).search.tree_constraint is False


@pytest.fixture(scope="module")
def parsing_vocab(tmp_path_factory: pytest.TempPathFactory) -> SentencePieceVocabulary:
    sentences = [
        "The cat sat on the mat .",
        "(S (NP XX XX )NP (VP XX (PP XX (NP XX XX )NP )PP )VP XX )S",
    ] * 20
    path = tmp_path_factory.mktemp("vocab") / "parsing.model"
    return SentencePieceVocabulary.train(
        iter(sentences), str(path), 100, whole_words=ParsingProblem.whole_words
    )


def test_tables_come_from_shared_or_separate_vocabularies(
    parsing_vocab: SentencePieceVocabulary, tmp_path
) -> None:
    tables = tree_tokens({"inputs": parsing_vocab, "targets": parsing_vocab})
    assert tables is not None
    pieces = parsing_vocab.pieces
    assert pieces([tables.leaf_id]) == ["\u2581XX"]
    labels = [pieces([i])[0][2:] for i in tables.open_ids]
    assert sorted(labels) == sorted(PTB_LABELS)
    assert [pieces([i])[0] for i in tables.close_ids] == [f"\u2581){label}" for label in labels]
    # Characters the vocabulary lacks still start a word with "▁" (then UNK).
    for text, count in [("The cat .", 3), ("\u20acuro cat", 2), ("The \u2603at \u2603", 3)]:
        assert tables.words(parsing_vocab.encode(text)) == count
        assert int(words_tensor(tables, parsing_vocab.encode(text))) == count
    words_only = SentencePieceVocabulary.train(
        iter(["a cat sat on a mat ."] * 20), str(tmp_path / "words.model"), 30
    )
    separate = tree_tokens({"inputs": words_only, "targets": parsing_vocab})
    assert separate is not None and separate.open_ids == tables.open_ids
    assert separate.inputs_vocab_size == words_only.vocab_size
    assert separate.words(words_only.encode("a cat sat")) == 3
    assert tree_tokens({"inputs": ByteVocabulary(), "targets": ByteVocabulary()}) is None


def words_tensor(tables: TreeTokens, ids: list[int]) -> tf.Tensor:
    return words(tables, tf.constant([[*ids, EOS_ID, PAD_ID]]))[0]


def test_only_a_forward_parsing_problem_has_a_constraint(parsing_vocab) -> None:
    vocabs = {"inputs": parsing_vocab, "targets": parsing_vocab}
    assert registry.problem("parsing_english_wsj16k").tree_constraint(vocabs) is not None
    assert registry.problem("parsing_english_wsj16k_rev").tree_constraint(vocabs) is None
    assert registry.problem("translate_number_words_en_de").tree_constraint(vocabs) is None


def test_a_tree_too_long_for_the_limit_keeps_what_fits() -> None:
    """N + 2 > max_lengths: N is cut so that a tree still ends by the limit."""
    constraint = constraint_for(5, 4)
    assert int(constraint.needed[0]) == 2
