"""Greedy and beam search: against each other, exhaustive enumeration, and alpha.

The Decoders run uncompiled (jit_compile=False), since compiling each one
costs seconds; that XLA decodes the same is checked by
test_xla_on_and_off_decode_the_same and by the signature test.
"""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import pytest
import tensorflow as tf
from decoders import build_model, make_decoder
from eos_first import make_eos_first

from t2t_keras.data.ids import EOS_ID
from t2t_keras.errors import UserError
from t2t_keras.models import TransformerHParams
from t2t_keras.search import beam_search, decode_limits, greedy_search, length_penalty, rules
from t2t_keras.search.settings import STOPPING_RULES, DecodeHParams

TINY = TransformerHParams(
    vocab_size=20,
    num_encoder_layers=2,
    num_decoder_layers=2,
    d_model=16,
    d_ff=32,
    num_heads=2,
    d_k=8,
    d_v=8,
    max_length=24,
)
INPUTS = tf.constant([[5, 6, 7, 8, 9, 1], [9, 4, 1, 0, 0, 0], [3, 1, 0, 0, 0, 0]])


@pytest.fixture(scope="module")
def model():
    return build_model(TINY, 3)


def search(
    model,
    inputs,
    beam_size: int,
    alpha: float,
    extra_length: int,
    greedy=False,
    stopping="first_k",
    penalty="gnmt",
):
    """One search, uncompiled, with the Decoder's length limits."""
    decode_length, max_lengths = decode_limits(inputs, extra_length, model.hparams.max_length)
    state, step = model.start_decoding(inputs, decode_length, beam_size)
    if greedy:
        return greedy_search(step, state, decode_length, max_lengths, alpha, penalty=penalty)
    return beam_search(
        step,
        state,
        beam_size,
        decode_length,
        max_lengths,
        alpha,
        stopping=stopping,
        penalty=penalty,
    )


@pytest.mark.parametrize(("alpha", "penalty"), [(0.0, "gnmt"), (0.6, "gnmt"), (2.0, "length")])
def test_beam_of_one_is_greedy(model, alpha: float, penalty: str) -> None:
    greedy_ids, greedy_scores = search(model, INPUTS, 1, alpha, 10, greedy=True, penalty=penalty)
    beam_ids, beam_scores = search(model, INPUTS, 1, alpha, 10, penalty=penalty)
    np.testing.assert_array_equal(beam_ids, greedy_ids)
    np.testing.assert_allclose(beam_scores, greedy_scores, rtol=1e-5)


@pytest.mark.parametrize(
    ("stopping", "penalty"), [*((rule, "gnmt") for rule in STOPPING_RULES), ("first_k", "length")]
)
def test_wide_beam_finds_the_exhaustive_best(stopping: str, penalty: str) -> None:
    """Vocab 5 (PAD, EOS and 3 tokens), at most 3 tokens before EOS: 40 hypotheses."""
    model = build_model(TINY.override("vocab_size=5,max_length=8"), seed=7)
    inputs = tf.constant([[3, 4, 1]])
    hypotheses = all_hypotheses(most_tokens=3)
    log_probs = teacher_forced_log_probs(model, inputs, hypotheses)
    for alpha in (0.0, 0.6, 1.5):
        ids, scores = search(
            model,
            inputs,
            beam_size=64,
            alpha=alpha,
            extra_length=0,
            stopping=stopping,
            penalty=penalty,
        )
        ranked = sorted(
            (
                (total / float(length_penalty(len(ids), alpha, penalty)), ids)
                for total, ids in zip(log_probs, hypotheses, strict=True)
            ),
            reverse=True,
        )
        assert strip(ids[0, 0].numpy()) == list(ranked[0][1])
        np.testing.assert_allclose(scores[0, 0], ranked[0][0], rtol=1e-4)
        # Every hypothesis is reachable with this beam: the n-best is the ranking.
        found = [s for s in scores[0].numpy() if np.isfinite(s)]
        np.testing.assert_allclose(found, [score for score, _ in ranked], rtol=1e-4)


def all_hypotheses(most_tokens: int) -> list[tuple[int, ...]]:
    """Every sequence of up to `most_tokens` of the tokens 2, 3, 4, then EOS."""
    return [
        (*body, EOS_ID)
        for length in range(most_tokens + 1)
        for body in itertools.product([2, 3, 4], repeat=length)
    ]


def teacher_forced_log_probs(model, inputs, hypotheses) -> list[float]:
    """Each hypothesis' log-probability, all scored in one padded batch."""
    longest = max(len(ids) for ids in hypotheses)
    targets = tf.constant([list(ids) + [0] * (longest - len(ids)) for ids in hypotheses])
    features = {"inputs": tf.repeat(inputs, len(hypotheses), axis=0), "targets": targets}
    log_probs = tf.nn.log_softmax(model(features)).numpy()
    return [
        float(sum(log_probs[row, position, token] for position, token in enumerate(ids)))
        for row, ids in enumerate(hypotheses)
    ]


def strip(ids: np.ndarray) -> list[int]:
    ids = list(ids)
    return ids[: ids.index(EOS_ID) + 1]


def table_step(state, index, previous, parents=None):
    """A hand-written next-token distribution over PAD, EOS, 2, 3, 4.

    First token: EOS 0.4, "2" 0.35, "3" 0.25. After "2": EOS 0.9. Alone, EOS
    scores log 0.4 = -0.92; "2 EOS" scores log 0.315 = -1.16 over 2 tokens.
    """
    table = tf.math.log(
        tf.constant(
            [
                [1e-30, 0.40, 0.35, 0.25, 1e-30],  # after PAD (the start)
                [1e-30, 1.00, 1e-30, 1e-30, 1e-30],  # after EOS (unused)
                [1e-30, 0.90, 0.05, 0.05, 1e-30],  # after 2
                [1e-30, 0.50, 0.25, 0.25, 1e-30],  # after 3
                [1e-30, 1.00, 1e-30, 1e-30, 1e-30],  # after 4
            ]
        )
    )
    return tf.gather(table, previous), state


@pytest.mark.parametrize(
    ("alpha", "best", "score"),
    [(0.0, [EOS_ID], math.log(0.4)), (2.0, [2, EOS_ID], math.log(0.35 * 0.9) / (7 / 6) ** 2)],
)
def test_alpha_changes_the_choice(alpha: float, best: list[int], score: float) -> None:
    """Without a penalty the short hypothesis wins; alpha=2 favours the longer one."""
    state = tf.zeros([4, 1])
    ids, scores = beam_search(table_step, state, 4, 4, tf.constant([3]), alpha)
    assert strip(ids[0, 0].numpy()) == best
    assert scores[0, 0].numpy() == pytest.approx(score, rel=1e-5)
    greedy_ids, _ = greedy_search(table_step, tf.zeros([1, 1]), 4, tf.constant([3]), alpha)
    assert strip(greedy_ids[0, 0].numpy()) == [EOS_ID]  # Greedy never looks past EOS.


def test_outputs_respect_each_sentences_length_limit(model) -> None:
    ids, _ = make_decoder(model, 3, extra_length=2, return_beams=True, jit_compile=False)(INPUTS)
    assert ids.shape == (3, 3, 9)  # L: 6 input positions + 2 tokens + EOS.
    input_lengths = [6, 3, 2]
    for sentence, limit in enumerate(input_lengths):
        for beam in ids[sentence].numpy():
            assert len(strip(beam)) - 1 <= limit + 2


@pytest.mark.parametrize("beam_size", [1, 4])
def test_each_sentence_decodes_alone_as_in_the_batch(model, beam_size: int) -> None:
    decoder = make_decoder(model, beam_size, extra_length=5, return_beams=True, jit_compile=False)
    batch_ids, batch_scores = decoder(INPUTS)
    for row in range(INPUTS.shape[0]):
        alone = INPUTS[row : row + 1, : int(tf.reduce_sum(tf.cast(INPUTS[row] > 0, tf.int32)))]
        ids, scores = decoder(alone)
        for beam in range(beam_size):
            assert strip(ids[0, beam].numpy()) == strip(batch_ids[row, beam].numpy())
        np.testing.assert_allclose(scores[0], batch_scores[row], rtol=1e-4)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_xla_on_and_off_decode_the_same(model, beam_size: int) -> None:
    compiled = make_decoder(model, beam_size, return_beams=True, jit_compile=True)(INPUTS)
    plain = make_decoder(model, beam_size, return_beams=True, jit_compile=False)(INPUTS)
    np.testing.assert_array_equal(compiled[0], plain[0])
    np.testing.assert_allclose(compiled[1], plain[1], rtol=1e-5)


def test_n_best_lists_are_complete_and_sorted(model) -> None:
    ids, scores = make_decoder(model, beam_size=4, return_beams=True, jit_compile=False)(INPUTS)
    assert ids.shape[:2] == (3, 4)
    assert np.all(np.isfinite(scores.numpy()))
    assert np.all(np.diff(scores.numpy(), axis=1) <= 0)
    for sentence in ids.numpy():
        assert len({tuple(strip(beam)) for beam in sentence}) == 4


def test_best_only_stops_early_with_the_same_best(model) -> None:
    best_ids, best_scores = make_decoder(model, beam_size=4, jit_compile=False)(INPUTS)
    all_ids, all_scores = make_decoder(model, beam_size=4, return_beams=True, jit_compile=False)(
        INPUTS
    )
    assert best_ids.shape[:2] == (3, 1)
    np.testing.assert_array_equal(best_ids[:, 0], all_ids[:, 0])
    np.testing.assert_allclose(best_scores[:, 0], all_scores[:, 0], rtol=1e-6)


def test_eos_only_input_decodes_to_a_valid_output(model) -> None:
    ids, scores = make_decoder(model, beam_size=2, jit_compile=False)(tf.constant([[EOS_ID]]))
    assert ids.shape[:2] == (1, 1)
    assert strip(ids[0, 0].numpy())[-1] == EOS_ID and np.isfinite(scores[0, 0])


def test_too_long_inputs_are_truncated_with_a_warning(model, caplog) -> None:
    long_row = [3 + i % 17 for i in range(30)] + [EOS_ID]  # 31 ids of the vocabulary of 20.
    too_long = tf.constant([long_row])
    with caplog.at_level(logging.WARNING):
        ids, _ = make_decoder(model, beam_size=1, jit_compile=False)(too_long)
    assert "1 input(s) longer than max_length=24 tokens were truncated" in caplog.text
    assert ids.shape == (1, 1, 24)
    truncated = make_decoder(model)._truncate(tf.constant([long_row, [5] * 20 + [1] + [0] * 10]))
    assert truncated.shape == (2, 24)
    assert truncated[0, -1] == EOS_ID and list(truncated[1]) == [5] * 20 + [1, 0, 0, 0]


def test_no_warning_when_only_padding_is_cut(model, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        make_decoder(model)._truncate(tf.constant([[5, 1] + [0] * 30]))
    assert "truncated" not in caplog.text


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_signature_of_unknown_shape_decodes_the_same(model, beam_size: int) -> None:
    """What a SavedModel serving signature needs: [None, None] inputs, whose output
    positions (the decoding cache) still follow the batch's width, not max_length."""
    decoder = make_decoder(model, beam_size, extra_length=3, jit_compile=False)
    signature = [tf.TensorSpec([None, None], tf.int32)]
    traced = tf.function(decoder._search_ids, input_signature=signature, jit_compile=True)
    ids, scores = traced(INPUTS)
    expected_ids, expected_scores = decoder(INPUTS)
    assert ids.shape[-1] == INPUTS.shape[1] + 3 + 1 < TINY.max_length
    for sentence in range(INPUTS.shape[0]):
        assert strip(ids[sentence, 0].numpy()) == strip(expected_ids[sentence, 0].numpy())
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5)


@pytest.fixture(scope="module")
def eos_first_model():
    model = build_model(TINY, 3)
    make_eos_first(model)
    return model


# Greedy search (beam 1, first_k) and beam search under each stopping rule.
@pytest.mark.parametrize(
    ("beam_size", "stopping"), [(1, "first_k"), (4, "first_k"), (4, "best_possible")]
)
def test_a_non_empty_input_never_gives_an_empty_output(
    eos_first_model, beam_size: int, stopping: str
) -> None:
    inputs = tf.constant([[5, 6, 7, 1], [9, 1, 0, 0], [EOS_ID, 0, 0, 0]])
    old = make_decoder(
        eos_first_model, beam_size, min_length=0, stopping=stopping, jit_compile=False
    )(inputs)
    assert [strip(row) for row in old[0][:, 0].numpy()] == [[EOS_ID]] * 3  # EOS first.
    for min_length in (1, 3):
        ids, scores = make_decoder(
            eos_first_model, beam_size, min_length=min_length, stopping=stopping, jit_compile=False
        )(inputs)
        outputs = [strip(row) for row in ids[:, 0].numpy()]
        assert [len(output) - 1 for output in outputs[:2]] == [min_length] * 2
        assert outputs[2] == [EOS_ID]  # An empty input may still end at once.
        assert np.all(np.isfinite(scores.numpy()))


def test_min_length_never_exceeds_the_length_limit(eos_first_model) -> None:
    ids, _ = make_decoder(eos_first_model, 2, extra_length=0, min_length=10, jit_compile=False)(
        tf.constant([[5, 6, 1]])
    )
    assert len(strip(ids[0, 0].numpy())) - 1 == 3  # Input length + extra_length(0) wins.


def test_best_possible_stopping_follows_a_beam_that_can_still_win() -> None:
    """Beam 1, alpha 2: "first_k" stops at EOS (-0.92); "2 EOS" scores -0.85."""
    state = tf.zeros([1, 1])
    first_k, _ = beam_search(table_step, state, 1, 4, tf.constant([3]), 2.0)
    assert strip(first_k[0, 0].numpy()) == [EOS_ID]
    ids, scores = beam_search(
        table_step, state, 1, 4, tf.constant([3]), 2.0, stopping="best_possible"
    )
    assert strip(ids[0, 0].numpy()) == [2, EOS_ID]
    assert scores[0, 0].numpy() == pytest.approx(math.log(0.35 * 0.9) / (7 / 6) ** 2, rel=1e-5)


def test_length_penalty_forms() -> None:
    assert float(length_penalty(4, 0.5, "length")) == pytest.approx(2.0)
    assert float(length_penalty(7, 1.0, "gnmt")) == pytest.approx(2.0)
    assert float(length_penalty(7, 0.0, "length")) == 1.0
    with pytest.raises(ValueError, match="gnmt"):
        length_penalty(7, 1.0, "average")
    with pytest.raises(UserError, match="length_penalty"):
        DecodeHParams().override("length_penalty=average")


@pytest.mark.parametrize("jit_compile", [False, True])
def test_top_k_of_wide_rows_is_tensorflows_ties_and_all(jit_compile: bool) -> None:
    """The two-stage top-k of beam search gives tf.math.top_k's values and indices, on
    rows full of ties and -inf, of widths not a multiple of its chunks."""
    top = tf.function(rules.top_k, jit_compile=jit_compile)
    rng = np.random.default_rng(0)
    for width, k in [(2048, 1), (5000, 8), (8192 * 4, 8), (3001, 16), (100, 4)]:
        values = rng.integers(-3, 3, size=(4, width)).astype(np.float32)
        values[rng.random(values.shape) < 0.7] = -np.inf
        expected = tf.math.top_k(values, k)
        found = top(tf.constant(values), k)
        np.testing.assert_array_equal(found[0], expected.values)
        np.testing.assert_array_equal(found[1], expected.indices)
