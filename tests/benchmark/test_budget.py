"""Training budgets in steps, minutes or reference minutes, scaled by a (faked) matmul rate."""

from __future__ import annotations

import pytest

from t2t_keras.benchmark.budget import REFERENCE_MATMUL_FLOPS, resolve_budget
from t2t_keras.errors import UserError


@pytest.mark.parametrize(
    ("rate", "minutes_here"),
    [(REFERENCE_MATMUL_FLOPS, 30.0), (REFERENCE_MATMUL_FLOPS / 4, 120.0), (580e9, 15.0)],
)
def test_reference_minutes_buy_the_same_work_at_any_matmul_rate(
    rate: float, minutes_here: float
) -> None:
    budget = resolve_budget(None, None, 30.0, rate)
    assert budget.steps is None and budget.seconds == pytest.approx(minutes_here * 60)
    assert budget.description.startswith("30 reference minutes = ")
    assert f"{minutes_here:.1f} minutes here at {rate / 1e9:.0f} GFLOP/s" in budget.description


def test_steps_and_minutes_are_taken_as_given() -> None:
    assert resolve_budget(500, None, None, 1e9) == resolve_budget(500, None, None)
    assert resolve_budget(500, None, None).steps == 500
    minutes = resolve_budget(None, 2.5, None, 1e9)
    assert minutes.steps is None and minutes.seconds == 150.0


@pytest.mark.parametrize(
    ("steps", "minutes", "reference_minutes", "message"),
    [
        (None, None, None, "not none"),
        (100, 5.0, None, "not --steps and --minutes"),
        (None, 5.0, 30.0, "not --minutes and --reference_minutes"),
        (0, None, None, "--steps=0: a budget must be positive"),
        (None, -1.0, None, "--minutes=-1.0: a budget must be positive"),
        (None, None, 0.0, "--reference_minutes=0: a budget must be positive"),
    ],
)
def test_a_budget_that_is_not_exactly_one_positive_value_is_refused(
    steps: int | None, minutes: float | None, reference_minutes: float | None, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        resolve_budget(steps, minutes, reference_minutes, 290e9)


def test_a_budget_allows_training_until_its_steps_or_seconds_are_spent() -> None:
    by_steps, by_time = resolve_budget(3, None, None), resolve_budget(None, 1.0, None)
    assert by_steps.allows(2, 1e9) and not by_steps.allows(3, 0.0)
    assert by_time.allows(10**6, 59.9) and not by_time.allows(0, 60.0)
