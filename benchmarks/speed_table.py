"""Speed by model size: t2t-benchmark over model sizes, XLA modes and precisions.

    .venv/bin/python benchmarks/speed_table.py --sizes=tiny,small,base,big --rounds=3

A process per configuration, in alternating rounds; the JSON lines, then the medians' table.
"""

from __future__ import annotations

import itertools
import statistics

from absl import app, flags
from rounds import markdown_table, round_order
from t2t_commands import emit, t2t_benchmark

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
# The table's columns: t2t-benchmark's key, the column's title, the median's format.
COLUMNS = (
    ("tgt_tokens_per_s", "target tokens/s", ".0f"),
    ("sentences_per_s", "sentences/s", ".2f"),
    ("utilization", "utilization", ".2f"),
    ("peak_rss_mb", "peak RSS MB", ".0f"),
)


def configurations() -> list[tuple[str, list[str]]]:
    """(label, flags) of every run."""
    runs = []
    for size, xla, precision in itertools.product(FLAGS.sizes, FLAGS.xla, FLAGS.precisions):
        big = size == "big"
        arguments = ["--mode=train", f"--hparams_set=transformer_{size}", *SHAPES,
                     f"--steps={FLAGS.big_steps if big else FLAGS.steps}",
                     f"--warmup_steps={1 if big else 2}", f"--xla={xla}",
                     f"--mixed_precision={precision}"]  # fmt: skip
        runs.append((f"train {size} xla={xla} {precision}", arguments))
    for beams, xla in itertools.product(FLAGS.beams, FLAGS.decode_xla):
        arguments = ["--mode=decode", "--hparams_set=transformer_base", f"--beam_size={beams}",
                     *DECODE_SHAPES, f"--steps={FLAGS.steps}", "--warmup_steps=1", f"--xla={xla}"]  # fmt: skip
        runs.append((f"decode base beam={beams} xla={xla}", arguments))
    return runs


def main(argv: list[str]) -> None:
    del argv
    results: dict[str, list[dict]] = {}
    runs = configurations()
    for round_index in range(FLAGS.rounds):
        for label, arguments in round_order(runs, round_index):
            measurement = t2t_benchmark(arguments)
            emit({"label": label, "round": round_index, **measurement})
            results.setdefault(label, []).append(measurement)
    rows = []
    for label, _ in runs:  # The run, then each column's median over its rounds.
        measured = results[label]
        rows.append([label, *(f"{statistics.median(m[key] for m in measured):{spec}}"
                              for key, _, spec in COLUMNS)])  # fmt: skip
    print("\n" + markdown_table(["run", *(title for _, title, _ in COLUMNS)], rows))


if __name__ == "__main__":
    app.run(main)
