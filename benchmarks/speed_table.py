"""The speed table: t2t-benchmark over model sizes, XLA modes and precisions.

    .venv/bin/python benchmarks/speed_table.py [--sizes=tiny,small,base,big] [--rounds=3]

Training: for each --sizes entry (transformer_<size>, vocabulary 8,000), each
--xla mode and each --precisions entry, `t2t-benchmark --mode=train` at the
shapes of `benchmarks/peers.py` (64 sentences of 30 + 30 tokens; big takes
--big_steps timed steps, it is slow on a CPU). Decoding: transformer_base,
beam 1 and 4, 32 sentences of 30 tokens to exactly 30 output tokens, with
each --decode_xla mode. Every configuration runs in its own process, --rounds
times in alternating order; the table shows medians of target tokens/s (or
sentences/s) and of utilization. Prints the JSON lines as they come, then a
Markdown table.
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys

from absl import app, flags

from t2t_keras.modes import XLA_MODES

flags.DEFINE_list("sizes", ["tiny", "small", "base", "big"], "transformer_<size> sets trained.")
flags.DEFINE_list("xla", list(XLA_MODES), "--xla modes of training.")
flags.DEFINE_list("precisions", ["off", "bf16"], "--mixed_precision values of training.")
flags.DEFINE_list("decode_xla", ["attention", "full"], "--xla modes of decoding.")
flags.DEFINE_list("beams", ["1", "4"], "Beam sizes decoded.")
flags.DEFINE_integer("rounds", 3, "Runs of every configuration.")
flags.DEFINE_integer("steps", 5, "Timed steps (decodes) per run.")
flags.DEFINE_integer("big_steps", 2, "Timed steps per run of transformer_big.")
FLAGS = flags.FLAGS

SHAPES = ["--batch_sentences=64", "--src_length=30", "--tgt_length=30"]
DECODE_SHAPES = ["--decode_batch=32", "--src_length=30", "--fixed_output_length=30"]


def configurations() -> list[tuple[str, list[str]]]:
    """(label, flags) of every run."""
    runs = []
    for size, xla, precision in itertools.product(FLAGS.sizes, FLAGS.xla, FLAGS.precisions):
        big = size == "big"
        runs.append(
            (
                f"train {size} xla={xla} {precision}",
                [
                    "--mode=train",
                    f"--hparams_set=transformer_{size}",
                    *SHAPES,
                    f"--steps={FLAGS.big_steps if big else FLAGS.steps}",
                    f"--warmup_steps={1 if big else 2}",
                    f"--xla={xla}",
                    f"--mixed_precision={precision}",
                ],
            )
        )
    for beams, xla in itertools.product(FLAGS.beams, FLAGS.decode_xla):
        runs.append(
            (
                f"decode base beam={beams} xla={xla}",
                [
                    "--mode=decode",
                    "--hparams_set=transformer_base",
                    f"--beam_size={beams}",
                    *DECODE_SHAPES,
                    f"--steps={FLAGS.steps}",
                    "--warmup_steps=1",
                    f"--xla={xla}",
                ],
            )
        )
    return runs


def run(arguments: list[str]) -> dict:
    output = subprocess.run(
        [sys.executable, "-m", "t2t_keras.bin.t2t_benchmark", *arguments],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    del argv
    results: dict[str, list[dict]] = {}
    runs = configurations()
    for round_number in range(FLAGS.rounds):
        order = runs if round_number % 2 == 0 else runs[::-1]
        for label, arguments in order:
            measurement = run(arguments)
            print(json.dumps({"label": label, "round": round_number, **measurement}), flush=True)
            results.setdefault(label, []).append(measurement)
    print("\n| run | target tokens/s | sentences/s | utilization | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for label, _ in runs:
        measured = results[label]

        def median(key: str, measured: list[dict] = measured) -> float:
            return statistics.median(m[key] for m in measured)

        print(
            f"| {label} | {median('tgt_tokens_per_s'):.0f} | {median('sentences_per_s'):.2f} "
            f"| {median('utilization'):.2f} | {median('peak_rss_mb'):.0f} |"
        )


if __name__ == "__main__":
    app.run(main)
