"""Data speed on Multi30k: t2t-datagen's sentence pairs/s, the input pipeline's tokens/s.

    .venv/bin/python benchmarks/data_speed.py [--shared_data=../shared/data]

Copies Multi30k's train and val files into a temporary tmp_dir as
text2text_tmpdir expects, generates the data (vocabulary included), then
reads training batches (transformer_base batching: 4096 tokens) and counts
source + target tokens, padding excluded, per second. Tokens are counted in
the graph, so the figure is the pipeline's and not Python's per-batch cost.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import tensorflow as tf
from absl import app, flags
from multi30k import prepare_tmp_dir

from t2t_keras import catalog, registry

flags.DEFINE_integer("batches", 500, "Batches read per timed pass.")
flags.DEFINE_integer("runs", 3, "Timed passes of the input pipeline.")
FLAGS = flags.FLAGS


def count_tokens(batch: dict[str, tf.Tensor]) -> tf.Tensor:
    return tf.math.count_nonzero(batch["inputs"]) + tf.math.count_nonzero(batch["targets"])


def pipeline_tokens_per_second(problem, data_dir: str) -> float:
    hparams = registry.hparams("transformer_base")
    dataset = problem.dataset("train", hparams.batching(), data_dir).map(count_tokens)
    iterator = iter(dataset)
    next(iterator)  # Fill buffers.
    start, tokens = time.perf_counter(), 0
    for _ in range(FLAGS.batches):
        tokens += int(next(iterator))
    return tokens / (time.perf_counter() - start)


def main(argv: list[str]) -> None:
    catalog.load()
    del argv
    with tempfile.TemporaryDirectory() as work:
        tmp_dir, data_dir = os.path.join(work, "tmp"), os.path.join(work, "data")
        os.makedirs(tmp_dir)
        prepare_tmp_dir(tmp_dir)
        problem = registry.problem("text2text_tmpdir")
        start = time.perf_counter()
        problem.generate_data(data_dir, tmp_dir)
        seconds = time.perf_counter() - start
        pairs = 29_000 + 1_014
        print(
            f"datagen: {pairs} pairs (vocabulary included) in {seconds:.1f} s, "
            f"{pairs / seconds:.0f} pairs/s"
        )
        rates = [pipeline_tokens_per_second(problem, data_dir) for _ in range(FLAGS.runs)]
        print(
            f"input pipeline: median {statistics.median(rates):,.0f} tokens/s "
            f"(source + target, no padding; runs: {', '.join(f'{r:,.0f}' for r in rates)})"
        )


if __name__ == "__main__":
    app.run(main)
