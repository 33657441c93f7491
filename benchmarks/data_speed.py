"""Data at WMT size: t2t-datagen and the input pipeline's time, memory and tokens/s per core.

    .venv/bin/python benchmarks/data_speed.py [--sizes=500000,1500000,4500000]

Corpora of --sizes pairs of real text, `t2t-datagen` on each, then the
largest's batches read on one core and on all; one JSON line per
measurement. Figures: docs/benchmarks.md#data-at-wmt-size.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import t2t_commands
from absl import app, flags
from multi30k import corpus_path

PROBLEM = "translate_ende_wmt_bpe37k"
WMT_TRAIN = ("newstest2008", "newstest2009", "newstest2010", "newstest2011", "newstest2012")

flags.DEFINE_list("sizes", ["500000", "1500000", "4500000"], "Corpus sizes in sentence pairs.")
flags.DEFINE_string("work_dir", "/tmp/t2t_data_speed", "Where corpora and shards go (~4 GB).")
flags.DEFINE_integer("seconds", 60, "Timed reading of the input pipeline, per measurement.")
flags.DEFINE_string("pipeline_only", None, "Internal: measure the pipeline of this data_dir.")
FLAGS = flags.FLAGS


def base_pairs() -> list[tuple[str, str]]:
    """The real English-German pairs the corpora are made of."""
    wmt = os.path.join(FLAGS.shared_data, "wmt")
    files = [(corpus_path("train", "en"), corpus_path("train", "de"))]
    files += [(f"{wmt}/{name}.en", f"{wmt}/{name}.de") for name in WMT_TRAIN]
    pairs = []
    for english, german in files:
        with open(english, encoding="utf-8") as source, open(german, encoding="utf-8") as target:
            pairs += [(s.strip(), t.strip()) for s, t in zip(source, target, strict=True)]
    return [(source, target) for source, target in pairs if source and target]


def joined_pairs(pairs: list[tuple[str, str]], seed: int = 1) -> Iterator[tuple[str, str]]:
    """Endless pairs, each two random base pairs joined, the same for the same seed."""
    rng = random.Random(seed)
    while True:
        (s1, t1), (s2, t2) = rng.choice(pairs), rng.choice(pairs)
        yield f"{s1} {s2}", f"{t1} {t2}"


def write_corpora(sizes: list[int]) -> dict[int, str]:
    """tmp_dirs holding the first `size` joined pairs each, and the dev set; made once."""
    tmp_dirs = {size: os.path.join(FLAGS.work_dir, f"tmp_{size}") for size in sizes}
    if all(os.path.exists(os.path.join(d, "train.de")) for d in tmp_dirs.values()):
        return tmp_dirs
    with contextlib.ExitStack() as stack:
        files = {}
        for size, tmp_dir in tmp_dirs.items():
            os.makedirs(tmp_dir, exist_ok=True)
            for language in ("en", "de"):
                shutil.copy(f"{FLAGS.shared_data}/wmt/newstest2013.{language}", tmp_dir)
                path = f"{tmp_dir}/train.{language}.part"
                files[size, language] = stack.enter_context(open(path, "w", encoding="utf-8"))
        pairs = joined_pairs(base_pairs())
        for index in range(max(sizes)):
            source, target = next(pairs)
            for size in sizes:
                if index < size:
                    files[size, "en"].write(source + "\n")
                    files[size, "de"].write(target + "\n")
    for (size, language), file in files.items():
        os.replace(file.name, os.path.join(tmp_dirs[size], f"train.{language}"))
    return tmp_dirs


def run_datagen(size: int, tmp_dir: str) -> dict:
    """t2t-datagen on tmp_dir as a process: wall time, peak RSS, its lines with their times."""
    data_dir = os.path.join(FLAGS.work_dir, f"data_{size}")
    shutil.rmtree(data_dir, ignore_errors=True)
    command = [*t2t_commands.t2t("t2t-datagen"), f"--problem={PROBLEM}",
               f"--data_dir={data_dir}", f"--tmp_dir={tmp_dir}"]  # fmt: skip
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines = [(round(time.perf_counter() - start, 1), line.strip()) for line in process.stdout]
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"t2t-datagen failed ({status}): {lines}")
    vocab_seconds = next((t for t, line in lines if "vocabulary" in line), None)
    return {
        "what": "datagen",
        "pairs": size,
        "seconds": round(seconds, 1),
        "vocabulary_seconds": vocab_seconds,
        "pairs_per_second": round(size / seconds),
        "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2),
        "disk_gib": round(_size(data_dir) / 2**30, 2),
        "corpus_gib": round(_size(tmp_dir) / 2**30, 2),
        "lines": [line for _, line in lines],
        "data_dir": data_dir,
    }


def _size(directory: str) -> int:
    return sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())


def run_pipeline(data_dir: str, cores: list[int]) -> dict:
    """This script's pipeline measurement in a process held to `cores`."""
    environment = dict(os.environ, TF_NUM_INTRAOP_THREADS=str(len(cores)))
    argv = [sys.executable, __file__, f"--pipeline_only={data_dir}", f"--seconds={FLAGS.seconds}"]
    output = subprocess.run(
        argv, env=environment, check=True, capture_output=True, text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cores),
    ).stdout  # fmt: skip
    return {**json.loads(output.strip().splitlines()[-1]), "pipeline_cores": len(cores)}


def measure_pipeline(data_dir: str) -> dict:
    """Reads training batches for FLAGS.seconds; target and source tokens/s, no padding."""
    import tensorflow as tf

    from t2t_keras import catalog, registry

    catalog.load()
    batching = registry.hparams("transformer_base").batching()
    dataset = registry.problem(PROBLEM).dataset("train", batching, data_dir)
    # Counted in the graph, 64 batches a step: the figure is the pipeline's, not Python's.
    sides = ("targets", "inputs")
    counts = dataset.map(lambda b: tf.stack([tf.math.count_nonzero(b[n]) for n in sides])).batch(64)
    iterator = iter(counts)
    next(iterator)  # Fill the shuffle buffer and the prefetch.
    targets = sources = batches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < FLAGS.seconds:
        step = next(iterator).numpy()
        targets, sources = targets + int(step[:, 0].sum()), sources + int(step[:, 1].sum())
        batches += len(step)
    seconds = time.perf_counter() - start
    return {
        "what": "pipeline",
        "batches": batches,
        "target_tokens_per_second": round(targets / seconds),
        "source_and_target_tokens_per_second": round((targets + sources) / seconds),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def main(argv: list[str]) -> None:
    del argv
    if FLAGS.pipeline_only:
        print(json.dumps(measure_pipeline(FLAGS.pipeline_only)))
        return
    machine = t2t_commands.machine_facts()
    sizes = sorted(int(size) for size in FLAGS.sizes)
    start = time.perf_counter()
    tmp_dirs = write_corpora(sizes)
    seconds = round(time.perf_counter() - start, 1)
    t2t_commands.emit({"what": "corpora", "seconds": seconds}, machine)
    results = [run_datagen(size, tmp_dirs[size]) for size in sizes]
    for result in results:
        t2t_commands.emit(result, machine)
    all_cores = sorted(os.sched_getaffinity(0))
    for cores in ([all_cores[0]], all_cores):
        t2t_commands.emit(run_pipeline(results[-1]["data_dir"], cores), machine)


if __name__ == "__main__":
    app.run(main)
