"""Preemption: time from a termination signal to t2t-trainer's exit, and a lost worker's.

    .venv/bin/python benchmarks/preemption.py --rounds=3

SIGTERM to `t2t-trainer` inside a step and at start-up; a worker of two
killed or frozen. One JSON line. Figures: docs/benchmarks.md#preemption.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from absl import app, flags
from t2t_commands import machine_facts, run, t2t

flags.DEFINE_list(
    "hparams_sets", ["transformer_tiny", "transformer_base"], "Sets measured; [] for none."
)
flags.DEFINE_integer("rounds", 3, "Signals per set and moment; the median is reported.")
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS

PROBLEM = "translate_number_words_en_de"


def _trainer(data_dir: Path, output_dir: Path, hparams_set: str) -> list[str]:
    return [
        *t2t("t2t-trainer"), f"--problem={PROBLEM}", f"--hparams_set={hparams_set}",
        f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=100000",
        "--save_checkpoints_steps=100000", "--eval_every_steps=0", "--eval_bleu_examples=0",
        "--log_step_count_steps=1", "--xla=attention",
    ]  # fmt: skip


def _wait_for(log: Path, pattern: str, process: subprocess.Popen) -> float:
    """Waits for a stderr line matching `pattern`; returns when it appeared."""
    while not re.search(pattern, log.read_text(errors="replace")):
        if process.poll() is not None:
            raise RuntimeError(f"the trainer ended early: {log.read_text()[-2000:]}")
        time.sleep(0.01)
    return time.monotonic()


def _signal_at(moment: str, argv: list[str], output_dir: Path, rng: random.Random) -> dict:
    log = output_dir.with_suffix(".log")
    with open(log, "w") as stderr:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
    if moment == "mid_training":
        third = _wait_for(log, r"step 3/", process)
        fourth = _wait_for(log, r"step 4/", process)
        time.sleep(rng.uniform(0, fourth - third))  # Somewhere inside step 5.
    else:
        while not (output_dir / ".lock").exists():
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 2))
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=600)
    seconds = time.monotonic() - sent
    found = re.search(r"terminated by SIGTERM at step (\d+)", log.read_text())
    return {"seconds": round(seconds, 2), "exit_code": code, "step": found and int(found[1])}


def _lost_worker(data_dir: Path, output_dir: Path, how: signal.Signals) -> dict:
    """Two workers; worker 1 gets `how` after step 3; how long worker 0 takes to stop."""
    sockets = [socket.create_server(("localhost", 0)) for _ in range(2)]
    cluster = {"worker": [f"localhost:{sock.getsockname()[1]}" for sock in sockets]}
    for sock in sockets:
        sock.close()
    argv = _trainer(data_dir, output_dir, "transformer_tiny")
    argv += ["--distribution_strategy=multi_worker_mirrored", "--xla=off"]
    workers = []
    for index in range(2):
        config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(config)}
        log = output_dir.with_name(f"{output_dir.name}_worker_{index}.log")
        with open(log, "w") as stderr:
            workers.append((subprocess.Popen(argv, env=env, stderr=stderr), log))
    (survivor, _), (lost, lost_log) = workers
    _wait_for(lost_log, r"step 3/", lost)
    lost.send_signal(how)
    sent = time.monotonic()
    code = survivor.wait(timeout=600)
    seconds = time.monotonic() - sent
    lost.kill()
    lost.wait()
    return {"seconds": round(seconds, 2), "exit_code": code}


def main(argv: list[str]) -> None:
    del argv
    work = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="preemption_"))
    data_dir = work / "data"
    if not data_dir.exists():
        datagen = [*t2t("t2t-datagen"), f"--problem={PROBLEM}", f"--tmp_dir={work / 'tmp'}"]
        run([*datagen, f"--data_dir={data_dir}"])
    rng, report = random.Random(1), {}
    for hparams_set in FLAGS.hparams_sets:
        for moment in ("mid_training", "start_up"):
            runs, size = [], 0
            for round_ in range(FLAGS.rounds):
                output_dir = work / f"{hparams_set}_{moment}_{round_}"
                trainer = _trainer(data_dir, output_dir, hparams_set)
                runs.append(_signal_at(moment, trainer, output_dir, rng))
                size = max(size, sum(p.stat().st_size for p in output_dir.glob("ckpt-*")))
            found = report[f"{hparams_set}/{moment}"] = {
                **_medians(runs),
                "checkpoint_megabytes": round(size / 1e6, 1),
            }
            print(json.dumps({hparams_set: found}), file=sys.stderr)
    lost = {
        how.name: _medians([
            _lost_worker(data_dir, work / f"lost_{how.name}_{round_}", how)
            for round_ in range(FLAGS.rounds)
        ])
        for how in (signal.SIGKILL, signal.SIGSTOP)
    }  # fmt: skip
    print(json.dumps({**machine_facts(), "signal_to_exit": report, "survivor_stops_after": lost}))


def _medians(runs: list[dict]) -> dict:
    return {"median_seconds": statistics.median(run["seconds"] for run in runs), "runs": runs}


if __name__ == "__main__":
    app.run(main)
