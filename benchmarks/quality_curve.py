"""Quality per training minute: what a run's checkpoints score at each minute of its budget.

    .venv/bin/python benchmarks/train_multi30k.py --curve_minutes=5,10,15,20 > ours.json
    .venv/bin/python benchmarks/peers_multi30k.py --curve_minutes=5,10,15,20 > peer.json
    .venv/bin/python benchmarks/quality_curve.py --plot=quality.png --test_set=test_2016_flickr \
        ours.json peer.json

A learning-rate schedule that does not depend on the budget (the inverse
square root decay of both recipes) makes one run's model at minute m the
model of an m-minute run, so one run per system gives the whole curve. Ours
averages the last --average checkpoints saved by minute m, as a run of m
minutes would at its end; the peer is scored on its weights at minute m.
Minutes are those of the budget: reference minutes with --reference_minutes
(the default), this machine's with --minutes or --steps.

Given JSON files, this draws each file's "curve" (the last JSON line with
one) as BLEU of --test_set against minutes, and prints the same as a
Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence

# A checkpoint saved this long after a curve minute still belongs to it: the
# trainer writes the last checkpoint of a budget just after the budget ends.
LATE_SECONDS = 15.0


def saved_checkpoints(output_dir: str) -> list[tuple[int, float, str]]:
    """(step, time written, prefix) of each checkpoint of output_dir, oldest step first."""
    found = []
    for name in os.listdir(output_dir):
        if name.startswith("ckpt-") and name.endswith(".index"):
            prefix = os.path.join(output_dir, name[: -len(".index")])
            found.append(
                (int(prefix.rsplit("-", 1)[1]), os.path.getmtime(prefix + ".index"), prefix)
            )
    return sorted(found)


def curve(
    minutes: Sequence[float],
    minute_seconds: float,
    started: float,
    output_dir: str,
    score: Callable[[list[str], str], dict],
    window: float = 1.0,
) -> list[dict]:
    """One point per minute m: score(the checkpoints saved by m, a name for them).

    Args:
      minutes: the curve's minutes, of the budget's kind.
      minute_seconds: wall seconds of one such minute here.
      started: `time.time()` when training started.
      output_dir: the training directory, every checkpoint of the budget kept.
      score: decodes and scores a model made of the given checkpoints.
      window: only the checkpoints of the last `window` share of the m minutes
        (the newest always): a run of m minutes that averages its last 5 of
        30 checkpoints averages those of its last 5/30.

    Returns:
      [{"minutes": m, "step": the newest checkpoint's step, **score(...)}], the
      minutes before the first checkpoint left out.
    """
    checkpoints = saved_checkpoints(output_dir)
    points = []
    for minute in minutes:
        deadline = started + minute * minute_seconds + LATE_SECONDS
        since = started + minute * minute_seconds * (1.0 - window)
        by_then = [(step, at, prefix) for step, at, prefix in checkpoints if at <= deadline]
        if by_then:
            chosen = [prefix for _, at, prefix in by_then[:-1] if at >= since] + [by_then[-1][2]]
            name = f"curve-{minute:g}"
            points.append({"minutes": minute, "step": by_then[-1][0], **score(chosen, name)})
    return points


def read_curve(path: str) -> tuple[str, str, list[dict]]:
    """(system, budget, curve) of the last JSON line of `path` that has a "curve"."""
    found = None
    with open(path, encoding="utf-8") as file:
        for line in file:
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("curve"):
                    found = record
    if found is None:
        raise SystemExit(f'{path}: no JSON line with a "curve" (run with --curve_minutes).')
    name = found.get("system", os.path.basename(path))
    return name, found.get("budget", ""), found["curve"]


def table(curves: Sequence[tuple[str, str, list[dict]]], test_set: str) -> str:
    """A Markdown table: one row per system, one column per minute, BLEU (step)."""
    minutes = sorted({point["minutes"] for _, _, points in curves for point in points})
    rows = ["| system | " + " | ".join(f"{m:g} min" for m in minutes) + " |"]
    rows.append("|---" * (len(minutes) + 1) + "|")
    for name, _, points in curves:
        at = {point["minutes"]: point for point in points}
        cells = [
            f"{at[m][test_set]['bleu']:.2f} ({at[m]['step']})" if m in at else "" for m in minutes
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(curves: Sequence[tuple[str, str, list[dict]]], test_set: str, path: str) -> None:
    """BLEU of test_set against minutes, one line per system."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for name, _, points in curves:
        axes.plot(
            [point["minutes"] for point in points],
            [point[test_set]["bleu"] for point in points],
            marker="o",
            label=name,
        )
    kind = "reference minutes" if "reference" in curves[0][1] else "minutes"
    axes.set_xlabel(f"training {kind} (2 CPU cores)")
    axes.set_ylabel(f"{test_set} sacreBLEU")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="+", help="JSON lines of train_multi30k / peers_multi30k")
    parser.add_argument("--test_set", default="test_2016_flickr")
    parser.add_argument("--plot", help="write the curves to this PNG")
    args = parser.parse_args(argv)
    curves = [read_curve(path) for path in args.files]
    print(table(curves, args.test_set))
    if args.plot:
        plot(curves, args.test_set, args.plot)


if __name__ == "__main__":
    main()
