"""Sampling: samples follow the model's distribution as the settings shape it, never
leave the allowed tokens, and are the same wherever a sentence is drawn.

The distributions are checked by a chi-square test on thousands of samples of
a model small enough to enumerate every output; the samples are drawn eagerly
(no tracing), the placement tests through the compiled slots.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest
import tensorflow as tf
from decoders import build_model

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.search import decode_limits, greedy_search, length_penalty
from t2t_keras.search.decoder import Decoder, minimum_lengths
from t2t_keras.search.sampling import Sampler, gather_samples
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.search.slots import SlotSearch
from tests.search.test_search import TINY
from tests.search.test_slots import LENGTHS, random_rows, strip

# Vocabulary 5 (PAD, EOS, 2, 3, 4): after the input [3, EOS], 1 or 2 tokens, then EOS.
SMALL = TINY.override("vocab_size=5,max_length=8")
SMALL_INPUT = [3, EOS_ID]
DRAWS = 6000
# A chi-square p-value below this fails: about one seed in a thousand fails a correct draw.
SIGNIFICANCE = 1e-3


@pytest.fixture(scope="module")
def small_model():
    return build_model(SMALL, seed=11)


@pytest.fixture(scope="module")
def model():
    return build_model(TINY.override("max_length=40"), seed=5)


def draw(model, inputs: list[list[int]], sampler: Sampler | None, extra_length: int = 0):
    """Samples of each input row, eagerly, as `Decoder` searches: (ids [B, L], scores [B])."""
    inputs = tf.constant(inputs, tf.int32)
    length, max_lengths = decode_limits(inputs, extra_length, model.hparams.max_length)
    state, step = model.start_decoding(inputs, length, 1)
    min_lengths = minimum_lengths(inputs, 1, max_lengths)
    ids, scores = greedy_search(step, state, length, max_lengths, 0.6, min_lengths, sampler=sampler)
    return ids[:, 0].numpy(), scores[:, 0].numpy()


def allowed_tokens(vocab: int, position: int, max_length: int) -> np.ndarray:
    """[V] bool: what the rules allow (no PAD, EOS not first, only EOS at the limit)."""
    tokens = np.arange(vocab)
    allowed = tokens != PAD_ID
    if position == 0:
        allowed &= tokens != EOS_ID
    if position >= max_length:
        allowed &= tokens == EOS_ID
    return allowed


def draw_probabilities(log_probs: np.ndarray, allowed: np.ndarray, sampler: Sampler) -> np.ndarray:
    """[V]: each token's chance of being drawn, computed apart from the search (numpy)."""
    scaled = np.where(allowed, log_probs / sampler.temperature, -np.inf)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    kept = np.zeros_like(probs)
    top = order[: sampler.top_k or len(order)]
    kept[top] = probs[top] / probs[top].sum()
    before = np.cumsum(kept[order]) - kept[order]  # The probability of the likelier ones.
    nucleus = order[before < sampler.top_p]
    final = np.zeros_like(probs)
    final[nucleus] = kept[nucleus]
    return final / final.sum()


def teacher_forced(model, sources: list[list[int]], outputs: list[list[int]]) -> np.ndarray:
    """[N, T, V] log-probabilities at each position of each output (EOS-ended) of
    sources [N, S]."""
    longest = max(len(ids) for ids in outputs)
    targets = tf.constant([ids + [PAD_ID] * (longest - len(ids)) for ids in outputs])
    features = {"inputs": tf.constant(sources), "targets": targets}
    return tf.nn.log_softmax(model(features)).numpy()


def sequence_probabilities(model, sampler: Sampler) -> dict[tuple[int, ...], float]:
    """Every output of SMALL_INPUT (1 or 2 tokens, then EOS) and its chance of being drawn."""
    outputs = [[a, EOS_ID] for a in (2, 3, 4)]
    outputs += [[a, b, EOS_ID] for a, b in itertools.product((2, 3, 4), repeat=2)]
    log_probs = teacher_forced(model, [SMALL_INPUT] * len(outputs), outputs)
    most_tokens = len(SMALL_INPUT)  # `decode_limits` with extra_length 0.
    chances = {}
    for row, ids in enumerate(outputs):
        chance = 1.0
        for position, token in enumerate(ids):
            allowed = allowed_tokens(SMALL.vocab_size, position, most_tokens)
            chance *= draw_probabilities(log_probs[row, position], allowed, sampler)[token]
        chances[tuple(ids)] = chance
    return chances


def chi_square_p_value(counts: collections.Counter, chances: dict, draws: int) -> float:
    """The p-value of the counts under the chances; outputs expected fewer than 5 times pooled."""
    assert set(counts) <= {ids for ids, chance in chances.items() if chance > 0}, counts
    cells, pooled = [], [0, 0.0]
    for ids, chance in chances.items():
        if draws * chance >= 5:
            cells.append((counts[ids], draws * chance))
        else:
            pooled[0] += counts[ids]
            pooled[1] += draws * chance
    if pooled[1] > 0:
        cells.append((pooled[0], pooled[1]))
    statistic = sum((seen - expected) ** 2 / expected for seen, expected in cells)
    freedom = len(cells) - 1
    return float(tf.math.igammac(freedom / 2, statistic / 2))


@pytest.mark.parametrize(
    "sampler",
    [
        Sampler(seed=1),
        Sampler(temperature=0.6, top_k=2, seed=2),
        Sampler(temperature=1.5, top_p=0.7, seed=3),
    ],
    ids=["plain", "temperature_top_k", "temperature_top_p"],
)
def test_samples_follow_the_models_distribution(small_model, sampler: Sampler) -> None:
    """DRAWS samples of one input against every output's exact chance."""
    ids, _ = draw(small_model, [SMALL_INPUT] * DRAWS, sampler)
    counts = collections.Counter(tuple(strip(row)) for row in ids)
    chances = sequence_probabilities(small_model, sampler)
    assert sum(chances.values()) == pytest.approx(1.0, abs=1e-5)
    assert chi_square_p_value(counts, chances, DRAWS) > SIGNIFICANCE


@pytest.fixture(scope="module")
def sources() -> list[list[int]]:
    """Inputs of 2, 5 and 9 words, 40 rows each, padded to one width (one shape)."""
    rows = random_rows([2, 5, 9], seed=7)
    width = max(map(len, rows))
    return [row + [PAD_ID] * (width - len(row)) for row in rows for _ in range(40)]


@pytest.mark.parametrize(
    "sampler",
    [Sampler(top_k=3, seed=4), Sampler(temperature=0.8, top_p=0.5, seed=5)],
    ids=["top_k", "top_p"],
)
def test_no_sample_leaves_the_allowed_tokens(model, sources, sampler: Sampler) -> None:
    """Every token of every sample is among those top_k / top_p keep at its position,
    and a sample scores its untempered log-probability over the length penalty."""
    extra_length = 3
    ids, scores = draw(model, sources, sampler, extra_length)
    outputs = [strip(row) for row in ids]
    log_probs = teacher_forced(model, sources, outputs)
    for row, output in enumerate(outputs):
        most_tokens = sum(token != PAD_ID for token in sources[row]) + extra_length
        assert output[-1] == EOS_ID and len(output) <= most_tokens + 1
        for position, token in enumerate(output):
            allowed = allowed_tokens(TINY.vocab_size, position, most_tokens)
            chances = draw_probabilities(log_probs[row, position], allowed, sampler)
            assert chances[token] > 0, (output, position)
        total = sum(log_probs[row, position, token] for position, token in enumerate(output))
        assert scores[row] == pytest.approx(total / float(length_penalty(len(output), 0.6)))


def test_a_seed_draws_the_same_samples_every_time_and_another_seed_others(model, sources) -> None:
    first, _ = draw(model, sources, Sampler(seed=1), extra_length=3)
    again, _ = draw(model, sources, Sampler(seed=1), extra_length=3)
    other, _ = draw(model, sources, Sampler(seed=2), extra_length=3)
    np.testing.assert_array_equal(first, again)
    assert np.mean([strip(a) != strip(b) for a, b in zip(first, other, strict=True)]) > 0.5
    # Rows of one input draw apart: most of its 40 samples differ.
    assert len({tuple(strip(row)) for row in first[:40]}) > 20


def test_a_tiny_temperature_is_greedy_search(model, sources) -> None:
    sampled, _ = draw(model, sources, Sampler(temperature=1e-4, seed=9), extra_length=3)
    greedy, _ = draw(model, sources, None, extra_length=3)
    np.testing.assert_array_equal(sampled, greedy)


def test_a_sentences_samples_are_its_own_wherever_it_is_drawn(model) -> None:
    """Samples depend on the seed and the sentence's number only: the same through
    3 XLA-compiled slots among 13 others or 13 others again, in the graph loop
    (a SavedModel's) and in the batch search."""
    given = "sampling=true,samples_per_input=3,top_k=10,temperature=1.2,extra_length=6,seed=5"
    settings = DecodeHParams().override(given).resolve(model.hparams).search
    rows = random_rows(LENGTHS)
    shared_search = SlotSearch(model, settings, slots=3)
    shared = shared_search.decode(rows)
    for ids, scores in shared:
        assert ids.shape[0] == 3 and np.all(np.diff(scores) <= 0)  # Best first.
    assert sum(len({tuple(strip(h)) for h in ids}) > 1 for ids, _ in shared) > len(rows) // 2
    # Other neighbours (of the same lengths: the same compiled shape), the rows reversed.
    others = random_rows(LENGTHS, seed=9)
    others[5] = rows[5]
    numbers = list(range(len(rows)))[::-1]
    among_others = shared_search.decode(others[::-1], numbers)
    assert [strip(h) for h in among_others[len(rows) - 6][0]] == [strip(h) for h in shared[5][0]]
    width = max(map(len, rows))
    padded = tf.constant([row + [PAD_ID] * (width - len(row)) for row in rows])
    graph_ids, _ = shared_search.search_tensor(padded)
    batch_ids, _ = Decoder(model, settings, jit_compile=False)(padded)
    for index, (ids, _) in enumerate(shared):
        expected = [strip(h) for h in ids]
        assert [strip(h) for h in graph_ids[index].numpy()] == expected
        assert [strip(h) for h in batch_ids[index].numpy()] == expected


def test_a_sentences_samples_of_different_widths_are_padded_together():
    """A sample searched again in wider slots (`slots`' second pass) comes back
    wider than its sisters: they are padded with PAD, best first."""
    narrow = (np.array([[5, EOS_ID, PAD_ID]]), np.array([-2.0]))
    wide = (np.array([[6, 7, 8, 9, EOS_ID, PAD_ID]]), np.array([-1.0]))
    first, second = gather_samples([[(0, *narrow)], [(1, *wide)]], samples=2)
    assert first == []
    ((sentence, ids, scores),) = second
    assert sentence == 0 and scores.tolist() == [-1.0, -2.0]
    assert ids.tolist() == [
        [6, 7, 8, 9, EOS_ID, PAD_ID],
        [5, EOS_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID],
    ]
