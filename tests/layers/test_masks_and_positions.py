"""Masks and position signals against literal arrays and the paper's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.layers import LearnedPositions, sinusoid
from t2t_keras.layers.masks import MASKED, beam_step_bias, causal_bias, padding_bias


def test_padding_bias_masks_pad_keys() -> None:
    bias = padding_bias(tf.constant([[5, 6, 1, 0], [7, 1, 0, 0]]))
    assert bias.shape == (2, 1, 1, 4)
    np.testing.assert_array_equal(
        bias[:, 0, 0].numpy(), [[0, 0, 0, MASKED], [0, 0, MASKED, MASKED]]
    )


def test_causal_bias_lets_each_query_see_itself_and_before() -> None:
    bias = causal_bias(3)
    np.testing.assert_array_equal(
        bias[0, 0].numpy(), [[0, MASKED, MASKED], [0, 0, MASKED], [0, 0, 0]]
    )


def test_beam_step_bias_shows_each_beam_its_ancestors_slots_up_to_the_index() -> None:
    # Beam 0 descends from row 1 at positions 0-1; beam 1 from row 0 at position 0.
    ancestors = tf.constant([[[1, 1, 0, 0], [0, 1, 1, 0]]])
    bias = beam_step_bias(ancestors, 2).numpy()
    assert bias.shape == (1, 1, 2, 8)
    visible = (bias[0, 0] == 0).astype(int)  # Slots: row 0's positions 0-3, then row 1's.
    np.testing.assert_array_equal(visible, [[0, 0, 1, 0, 1, 1, 0, 0], [1, 0, 0, 0, 0, 1, 1, 0]])
    assert set(np.unique(bias)) == {0.0, MASKED}


@pytest.mark.parametrize("d_model", [2, 8, 512])
def test_sinusoid_is_the_papers_formula_element_by_element(d_model: int) -> None:
    positions = [0, 1, 2, 7, 50, 255]
    signal = sinusoid(tf.constant(positions), d_model).numpy()
    expected = np.zeros((len(positions), d_model))
    for row, pos in enumerate(positions):
        for i in range(d_model // 2):
            expected[row, 2 * i] = math.sin(pos / 10000 ** (2 * i / d_model))
            expected[row, 2 * i + 1] = math.cos(pos / 10000 ** (2 * i / d_model))
    np.testing.assert_allclose(signal, expected, atol=2e-5)


def test_sinusoid_needs_an_even_width() -> None:
    with pytest.raises(ValueError, match="even d_model"):
        sinusoid(tf.range(3), 5)


def test_learned_positions_look_up_rows() -> None:
    table = LearnedPositions(max_length=6, d_model=4)
    table.build()
    rows = table(tf.constant([0, 5])).numpy()
    np.testing.assert_array_equal(rows, table.table.numpy()[[0, 5]])
    assert LearnedPositions.from_config(table.get_config()).max_length == 6
