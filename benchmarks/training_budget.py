"""The training benchmarks' budget: --steps, --minutes or --reference_minutes, one of them.

A reference minute (`t2t_keras.benchmark.budget`) is the wall time here
that does a minute's work of the reference host, scaled by this machine's
float32 matmul rate (benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Callable

from absl import flags
from t2t_commands import machine_facts

from t2t_keras.benchmark.budget import Budget, reference_seconds, resolve_budget

DEFAULT_REFERENCE_MINUTES = 30.0

flags.DEFINE_integer("steps", None, "Training budget in optimizer updates.", lower_bound=1)
flags.DEFINE_float("minutes", None, "Training budget in wall-clock minutes of this machine.")
flags.DEFINE_float(
    "reference_minutes",
    None,
    "Training budget in minutes of the reference host, scaled by this machine's float32 "
    f"matmul rate; the default ({DEFAULT_REFERENCE_MINUTES:g}) when no budget is given.",
)
FLAGS = flags.FLAGS


def resolve(machine: Callable[[], dict] = machine_facts) -> tuple[Budget, dict]:
    """The budget the flags ask for, and the machine's fields (`machine_facts`) for the JSON."""
    facts = machine()
    reference_minutes = FLAGS.reference_minutes
    if FLAGS.steps is None and FLAGS.minutes is None and reference_minutes is None:
        reference_minutes = DEFAULT_REFERENCE_MINUTES
    budget = resolve_budget(
        FLAGS.steps, FLAGS.minutes, reference_minutes, facts["matmul_fp32_flops_per_s"]
    )
    return budget, facts


def minute_seconds(facts: dict) -> float:
    """Wall seconds here of one minute of the budget's kind: a reference minute
    (scaled by the matmul rate in `facts`) unless --minutes or --steps was given."""
    if FLAGS.steps is None and FLAGS.minutes is None:
        return reference_seconds(1.0, facts["matmul_fp32_flops_per_s"])
    return 60.0


def summary(budget: Budget) -> dict:
    """The budget's fields of a JSON line."""
    return {
        "budget": budget.description,
        "budget_steps": budget.steps,
        "budget_seconds": None if budget.seconds is None else round(budget.seconds, 1),
    }
