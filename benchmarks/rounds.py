"""Timing rounds: the order contenders run in, repeated calls, and the medians reported
(docs/benchmarks.md: rounds alternate the contenders; a ratio is taken per round).
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")


def round_order(items: Sequence[Item], round_index: int) -> list[Item]:
    """`items` as given in even rounds (counted from 0), reversed in odd ones."""
    return list(items) if round_index % 2 == 0 else list(reversed(items))


def median_seconds(run: Callable[[], Any], warmup: int, repeats: int) -> float:
    """Median seconds of `repeats` calls of `run`, after `warmup` untimed ones (as
    `t2t_keras.benchmark.measure.time_runs`, without importing TensorFlow)."""
    for _ in range(warmup):
        run()
    return statistics.median(timeit.repeat(run, repeat=repeats, number=1))


def median_ratio(
    rounds: Sequence[Mapping[str, float]], numerator: str, denominator: str
) -> float | None:
    """The median over rounds of numerator / denominator; None if no round has both."""
    ratios = [
        measured[numerator] / measured[denominator]
        for measured in rounds
        if numerator in measured and denominator in measured
    ]
    return statistics.median(ratios) if ratios else None


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table: the header, its rule, one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
