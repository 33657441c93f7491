"""Training budgets that mean the same work on any CPU: steps, minutes or reference minutes.

A recipe stated in minutes of one machine buys several times more or less
training on another. A budget in *reference minutes* is scaled by this
machine's measured float32 matrix-product rate against the reference host's,
so 30 reference minutes do about the same work anywhere; a budget in steps
(fairseq's --max-update) is the same work by definition.
"""

from __future__ import annotations

import dataclasses

from t2t_keras.errors import UserError

# The reference host: 2 cores of an AMD EPYC with AVX-512, float32 matmul rate
# by `t2t-benchmark --mode=matmul` (2048 x 2048 products).
REFERENCE_HOST = "2 cores of an AVX-512 AMD EPYC"
REFERENCE_MATMUL_FLOPS = 290e9


@dataclasses.dataclass(frozen=True)
class Budget:
    """How long a benchmark trains: exactly one of steps or seconds is set.

    Args:
      steps: train this many steps; None = by time.
      seconds: wall-clock seconds of training on this machine; None = by steps.
      description: the budget as asked, for the JSON line (e.g. "30 reference minutes
        = 41.2 minutes here at 211 GFLOP/s").
    """

    steps: int | None
    seconds: float | None
    description: str

    def allows(self, steps_done: int, seconds_spent: float) -> bool:
        """Whether training goes on after steps_done steps in seconds_spent seconds."""
        if self.steps is not None:
            return steps_done < self.steps
        return seconds_spent < (self.seconds or 0.0)


def resolve_budget(
    steps: int | None,
    minutes: float | None,
    reference_minutes: float | None,
    matmul_rate: float | None = None,
) -> Budget:
    """The one budget given; reference minutes need this machine's float32 matmul rate."""
    given = [
        name
        for name, value in (
            ("--steps", steps),
            ("--minutes", minutes),
            ("--reference_minutes", reference_minutes),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise UserError(
            f"give exactly one training budget, not {' and '.join(given) or 'none'}: --steps=N "
            "(optimizer updates), --minutes=M (wall clock here) or --reference_minutes=M "
            f"(wall clock scaled to the reference host, {REFERENCE_HOST})."
        )
    for name, value in (("steps", steps), ("minutes", minutes)):
        if value is not None and value <= 0:
            raise UserError(f"--{name}={value}: a budget must be positive.")
    if steps is not None:
        return Budget(steps=steps, seconds=None, description=f"{steps} steps")
    if minutes is not None:
        return Budget(steps=None, seconds=minutes * 60, description=f"{minutes:g} minutes here")
    assert reference_minutes is not None and matmul_rate is not None
    seconds = reference_seconds(reference_minutes, matmul_rate)
    return Budget(
        steps=None,
        seconds=seconds,
        description=(
            f"{reference_minutes:g} reference minutes = {seconds / 60:.1f} minutes here at "
            f"{matmul_rate / 1e9:.0f} GFLOP/s (reference {REFERENCE_MATMUL_FLOPS / 1e9:.0f})"
        ),
    )


def reference_seconds(
    reference_minutes: float, matmul_rate: float, reference_rate: float = REFERENCE_MATMUL_FLOPS
) -> float:
    """Wall seconds here that do the work of reference_minutes on the reference host."""
    if reference_minutes <= 0:
        raise UserError(f"--reference_minutes={reference_minutes:g}: a budget must be positive.")
    if matmul_rate <= 0:
        raise ValueError(f"a matmul rate must be positive, not {matmul_rate}")
    return reference_minutes * 60 * reference_rate / matmul_rate
