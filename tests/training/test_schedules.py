"""The learning-rate schedules at literal steps."""

from __future__ import annotations

import math

import keras
import pytest

from t2t_keras.hparams.transformer import transformer_base, transformer_base_v3
from t2t_keras.training import TransformerSchedule, optimizer_from_hparams, schedule_from_hparams

# The paper's formula, d_model = 512, warmup 4000:
# lrate = 512^-0.5 * min(step^-0.5, step * 4000^-1.5).
PAPER = {
    1: 1.746928107421711e-07,  # 512^-0.5 * 1 * 4000^-1.5
    4000: 0.0006987712429686843,  # 512^-0.5 * 4000^-0.5, the peak
    100000: 0.00013975424859373686,  # 512^-0.5 * 100000^-0.5
}


@pytest.mark.parametrize("step", sorted(PAPER))
def test_paper_schedule_at_literal_steps(step: int) -> None:
    schedule = schedule_from_hparams(transformer_base())
    assert float(schedule.at_step(step)) == pytest.approx(PAPER[step], rel=1e-6)


def test_paper_schedule_values_are_the_formula() -> None:
    for step, value in PAPER.items():
        assert value == pytest.approx(512**-0.5 * min(step**-0.5, step * 4000**-1.5), rel=1e-12)


def test_the_optimizer_counts_steps_from_one() -> None:
    """Keras passes the 0-based iteration count; the first update uses step 1's rate."""
    optimizer = optimizer_from_hparams(transformer_base())
    assert float(optimizer.learning_rate) == pytest.approx(PAPER[1], rel=1e-6)
    optimizer.iterations.assign(3999)
    assert float(optimizer.learning_rate) == pytest.approx(PAPER[4000], rel=1e-6)


def test_t2t_schedule() -> None:
    """transformer_base_v3: learning_rate 2, warmup 8000, linear warmup then rsqrt decay."""
    schedule = schedule_from_hparams(transformer_base_v3())
    peak = 2.0 * 8000**-0.5 * 512**-0.5
    assert float(schedule.at_step(80)) == pytest.approx(peak * 80 / 8000, rel=1e-6)
    assert float(schedule.at_step(8000)) == pytest.approx(peak, rel=1e-6)
    assert float(schedule.at_step(32000)) == pytest.approx(peak / 2, rel=1e-6)


def test_constant_schedule_and_config_round_trip() -> None:
    schedule = TransformerSchedule("constant", 0.5, 512, 0)
    assert float(schedule.at_step(1)) == float(schedule.at_step(10**6)) == 0.5
    again = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert again.get_config() == schedule.get_config()
    assert math.isclose(float(again(0)), 0.5)
