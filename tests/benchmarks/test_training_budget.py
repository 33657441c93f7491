"""The training benchmarks' --steps / --minutes / --reference_minutes, with a faked matmul rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# The flags parsed as a benchmark parses them, the machine's rate faked: no TensorFlow loads.
RESOLVE = """
import json, sys
from absl import flags
import training_budget
flags.FLAGS(["benchmark", *sys.argv[1:]])
facts = {"cpu": "faked", "matmul_fp32_flops_per_s": 145e9}
budget, machine = training_budget.resolve(lambda: facts)
print(json.dumps({**training_budget.summary(budget), **machine}))
"""


def resolve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RESOLVE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=BENCHMARKS,
        env={"PYTHONPATH": str(BENCHMARKS)},
    )


@pytest.mark.parametrize(
    ("args", "steps", "seconds", "description"),
    [
        ((), None, 3600.0, "30 reference minutes = 60.0 minutes here at 145 GFLOP/s"),
        (("--reference_minutes=10",), None, 1200.0, "10 reference minutes = 20.0 minutes here"),
        (("--minutes=10",), None, 600.0, "10 minutes here"),
        (("--steps=700",), 700, None, "700 steps"),
    ],
)
def test_the_budget_flags_give_one_budget_scaled_by_the_matmul_rate(
    args: tuple[str, ...], steps: int | None, seconds: float | None, description: str
) -> None:
    result = resolve(*args)
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout)
    assert (line["budget_steps"], line["budget_seconds"]) == (steps, seconds)
    assert line["budget"].startswith(description) and line["cpu"] == "faked"


def test_two_budgets_are_refused() -> None:
    result = resolve("--steps=10", "--minutes=5")
    assert result.returncode != 0 and "give exactly one training budget" in result.stderr


def test_a_steps_budget_saves_thirty_checkpoints_and_no_time_limit() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from one_device import budget
    finally:
        sys.path.remove(str(BENCHMARKS))
    from t2t_keras.benchmark.budget import resolve_budget

    by_steps = budget(resolve_budget(600, None, None), average=5)
    assert by_steps == {"train_steps": 600, "save_checkpoints_steps": 20, "average_checkpoints": 5}
    by_time = budget(resolve_budget(None, None, 30.0, 145e9), average=1)
    assert by_time["max_seconds"] == 3600.0 and by_time["save_checkpoints_secs"] == 120
    assert by_time["average_checkpoints"] == 0
