"""Training-loss curves of benchmark runs, drawn together: per target token seen and per minute.

    .venv/bin/python benchmarks/loss_curves.py --plot=curves.png OURS.json PEER.json [more.json]

Draws the last "loss_curve" of each train_multi30k.py or peers_multi30k.py stdout.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence


def curve_point(step: int, seconds: float, target_tokens: float, loss: float) -> dict[str, float]:
    """One point of a "loss_curve", as both Multi30k benchmarks write it.

    Args:
      step: the update the interval ends at.
      seconds: wall seconds since training started.
      target_tokens: non-PAD target tokens seen since training started.
      loss: mean label-smoothed cross-entropy per target token over the interval.
    """
    return {
        "step": int(step),
        "seconds": round(seconds, 1),
        "target_tokens": int(target_tokens),
        "loss": round(loss, 4),
    }


def last_record(path: str, key: str) -> dict | None:
    """The last JSON line of `path` (a benchmark's stdout) that has `key`; None if none."""
    found = None
    with open(path, encoding="utf-8") as file:
        for line in file:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # Log lines, when stderr went to the same file.
            if isinstance(record, dict) and key in record:
                found = record
    return found


def read_curve(path: str) -> tuple[str, list[dict[str, float]]]:
    """The label and loss curve of the last JSON line of `path` that has a "loss_curve"."""
    found = last_record(path, "loss_curve")
    if found is None:
        raise ValueError(
            f"{path} has no JSON line with a loss_curve; give the JSON lines printed by "
            "benchmarks/train_multi30k.py or benchmarks/peers_multi30k.py."
        )
    return str(found.get("system") or os.path.basename(path)), found["loss_curve"]


def plot(curves: Sequence[tuple[str, list[dict[str, float]]]], path: str) -> None:
    """Loss against target tokens seen (left) and against wall-clock minutes (right)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4))
    by_tokens, by_minutes = figure.subplots(1, 2, sharey=True)
    for label, points in curves:
        losses = [point["loss"] for point in points]
        millions = [point["target_tokens"] / 1e6 for point in points]
        by_tokens.plot(millions, losses, ".-", label=label)
        by_minutes.plot([point["seconds"] / 60 for point in points], losses, ".-", label=label)
    by_tokens.set_xlabel("target tokens seen (millions)")
    by_tokens.set_ylabel("training loss (label-smoothed, per target token)")
    by_minutes.set_xlabel("wall-clock minutes of training")
    for axes in (by_tokens, by_minutes):
        axes.grid(alpha=0.3)
    by_minutes.legend(loc="upper right", fontsize=8)
    figure.savefig(path, dpi=100, bbox_inches="tight")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", required=True, help="The PNG written.")
    parser.add_argument("files", nargs="+", help="JSON lines files, one curve each.")
    args = parser.parse_args(argv)
    curves: list[tuple[str, list[dict[str, float]]]] = []
    for path in args.files:
        try:
            label, points = read_curve(path)
        except (OSError, ValueError) as error:
            parser.error(str(error))
        # Two runs of one system are told apart by their files.
        if label in {name for name, _ in curves}:
            label = f"{label} ({os.path.basename(path)})"
        curves.append((label, points))
    plot(curves, args.plot)
    print(f"{args.plot}: " + ", ".join(f"{label} ({len(p)} points)" for label, p in curves))


if __name__ == "__main__":
    main()
