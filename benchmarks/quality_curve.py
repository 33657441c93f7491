"""Quality per training minute: what a run's checkpoints score at each minute of its budget.

    .venv/bin/python benchmarks/quality_curve.py --plot=quality.png --test_set=test_2016_flickr \
        ours.json peer.json

Tables (and draws) the "curve" of train_multi30k.py and peers_multi30k.py
runs made with --curve_minutes. Figures: docs/benchmarks.md#quality-per-training-minute.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

from loss_curves import last_record
from rounds import markdown_table

# A checkpoint saved this long after a curve minute still belongs to it: the
# trainer writes the last checkpoint of a budget just after the budget ends.
LATE_SECONDS = 15.0


def saved_checkpoints(output_dir: str) -> list[tuple[int, float, str]]:
    """(step, time written, prefix) of each checkpoint of output_dir, oldest step first."""
    found = []
    for name in os.listdir(output_dir):
        if name.startswith("ckpt-") and name.endswith(".index"):
            prefix = os.path.join(output_dir, name[: -len(".index")])
            step = int(prefix.rsplit("-", 1)[1])
            found.append((step, os.path.getmtime(prefix + ".index"), prefix))
    return sorted(found)


def curve(
    minutes: Sequence[float],
    minute_seconds: float,
    started: float,
    output_dir: str,
    score: Callable[[list[str], str], dict],
    window: float = 1.0,
) -> list[dict]:
    """One point per minute m of the budget (`minute_seconds` of wall time each, from
    `started`, a `time.time()`): {"minutes": m, "step": the newest checkpoint's step,
    **score(checkpoints, a name for them)}, the minutes before the first checkpoint left
    out. The checkpoints are those of output_dir saved by m, only of the last `window`
    share of its m minutes (the newest always): a run of m minutes that averages its
    last 5 of 30 checkpoints averages those of its last 5/30."""
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
    found = last_record(path, "curve")
    if found is None:
        raise SystemExit(f'{path}: no JSON line with a "curve" (run with --curve_minutes).')
    return found.get("system", os.path.basename(path)), found.get("budget", ""), found["curve"]


def table(curves: Sequence[tuple[str, str, list[dict]]], test_set: str) -> str:
    """A Markdown table: one row per system, one column per minute, BLEU (step)."""
    minutes = sorted({point["minutes"] for _, _, points in curves for point in points})
    rows = []
    for name, _, points in curves:
        at = {point["minutes"]: point for point in points}
        cells = (
            f"{at[m][test_set]['bleu']:.2f} ({at[m]['step']})" if m in at else "" for m in minutes
        )
        rows.append([name, *cells])
    return markdown_table(["system", *(f"{m:g} min" for m in minutes)], rows)


def plot(curves: Sequence[tuple[str, str, list[dict]]], test_set: str, path: str) -> None:
    """BLEU of test_set against minutes, one line per system."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4))
    axes = figure.add_subplot()
    for name, _, points in curves:
        bleu = [point[test_set]["bleu"] for point in points]
        axes.plot([point["minutes"] for point in points], bleu, marker="o", label=name)
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
