"""Two worker processes on localhost under MultiWorkerMirroredStrategy (TF_CONFIG).

t2t-trainer's workers: one SIGKILLed (the other stops at once with a paragraph
naming it), rerun (both resume) and one SIGTERMed (both save the same step).
Marked slow: through the library both workers end with the same weights, and
workers stopped and rerun end with them too, bit for bit.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from trainer_processes import checkpoint_steps, lock_is_free, trainer_command, wait_for_line

from t2t_keras.models import TransformerHParams
from t2t_keras.run.weights import build_model, restore_model
from t2t_keras.termination import RESTARTABLE_EXIT_CODE, WORKER_LOST_EXIT_CODE

WORKER = Path(__file__).with_name("multi_worker_main.py")
STEPS = 24  # Of the slow test.


@dataclasses.dataclass
class Worker:
    process: subprocess.Popen
    log: Path
    address: str


def _cluster() -> dict[str, list[str]]:
    sockets = [socket.socket() for _ in range(2)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return {"worker": [f"localhost:{port}" for port in ports]}


def _start(commands: list[list[str]], logs: Path) -> list[Worker]:
    cluster, workers = _cluster(), []
    logs.mkdir()
    for index, command in enumerate(commands):
        config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(config)}
        log = logs / f"worker_{index}.log"
        with open(log, "w") as stderr:
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        workers.append(Worker(process, log, cluster["worker"][index]))
    return workers


def _kill_worker_1(command: list[str], output_dir: Path, logs: Path) -> None:
    """SIGKILL to worker 1 after ckpt-2: worker 0 stops at once, naming it, and frees output_dir."""
    workers = _start([command, command], logs)
    wait_for_line(workers[1].log, r"step 3/", workers[1].process)  # ckpt-2 is written.
    workers[1].process.kill()
    killed = time.monotonic()
    code = workers[0].process.wait(timeout=120)
    seconds = time.monotonic() - killed
    text = workers[0].log.read_text()
    assert code == WORKER_LOST_EXIT_CODE, text[-3000:]
    assert re.search(rf"worker 1 at {workers[1].address} stopped answering after step \d+", text)
    assert "Restart every worker with the same command" in text
    assert "Traceback" not in text
    assert seconds < 30, seconds  # At once when a connection fails; else the heartbeat timeout.
    assert lock_is_free(output_dir)


def _resume_then_terminate_worker_1(command: list[str], output_dir: Path, logs: Path) -> None:
    """Both resume; SIGTERM to worker 1: both save the same step and exit restartably."""
    newest = max(checkpoint_steps(output_dir))
    workers = _start([command, command], logs)
    wait_for_line(workers[1].log, rf"step {newest + 2}/", workers[1].process)
    workers[1].process.send_signal(signal.SIGTERM)
    for worker in workers:
        code = worker.process.wait(timeout=120)
        assert code == RESTARTABLE_EXIT_CODE, worker.log.read_text()[-3000:]
        assert f"Resumed from {output_dir}/ckpt-{newest}." in worker.log.read_text()
    pattern = r"terminated (by SIGTERM|with the other workers .*) at step (\d+); checkpoint ckpt-\2"
    lines = [re.search(pattern, worker.log.read_text()) for worker in workers]
    assert all(lines), [worker.log.read_text()[-2000:] for worker in workers]
    assert [line.group(1).startswith("with") for line in lines] == [True, False]
    saved = {int(line.group(2)) for line in lines}
    assert len(saved) == 1  # The same step on both.
    assert max(checkpoint_steps(output_dir)) == saved.pop() > newest
    assert not list(output_dir.glob(".scratch_*"))


def test_a_lost_worker_stops_the_other_and_a_signalled_one_stops_both_at_one_step(
    number_words_data: Path, tmp_path: Path
) -> None:
    output_dir = tmp_path / "train"
    command = [
        *(c for c in trainer_command(number_words_data, output_dir) if "devices" not in c),
        "--train_steps=1000",
        "--save_checkpoints_steps=2",
        "--distribution_strategy=multi_worker_mirrored",
    ]
    _kill_worker_1(command, output_dir, tmp_path / "killed")
    _resume_then_terminate_worker_1(command, output_dir, tmp_path / "terminated")


@pytest.mark.slow
def test_workers_stopped_and_rerun_end_as_if_never_interrupted(
    number_words_data: Path, tmp_path: Path
) -> None:
    """Through the library, two workers end with the same weights. Through t2t-trainer,
    SIGTERM to one worker, then a rerun of both to the end: the same weights again, bit
    for bit (under --deterministic)."""
    straight = tmp_path / "straight"
    library = [sys.executable, str(WORKER), str(number_words_data), str(straight)]
    for worker in _start(
        [[*library, str(tmp_path / f"worker_{i}.npz"), str(STEPS)] for i in range(2)],
        tmp_path / "straight_logs",
    ):
        assert worker.process.wait(timeout=300) == 0, worker.log.read_text()[-3000:]
    chief, other = (np.load(tmp_path / f"worker_{i}.npz") for i in range(2))
    assert len(chief.files) == len(other.files) > 0
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name])
    # Only the chief wrote output_dir; its newest checkpoint is the final step and loads.
    latest = tf.train.latest_checkpoint(str(straight))
    assert latest.endswith(f"ckpt-{STEPS}")
    assert not list(straight.glob(".scratch_*"))
    model = build_model(
        "transformer", TransformerHParams.from_json((straight / "hparams.json").read_text())
    )
    restore_model(model, latest)
    for restored, name in zip(model.get_weights(), chief.files, strict=True):
        np.testing.assert_array_equal(restored, chief[name])

    output_dir = tmp_path / "train"
    command = [
        *(c for c in trainer_command(number_words_data, output_dir) if "devices" not in c),
        f"--train_steps={STEPS}",
        "--save_checkpoints_steps=4",
        "--distribution_strategy=multi_worker_mirrored",
    ]
    workers = _start([command, command], tmp_path / "terminated")
    wait_for_line(workers[1].log, r"step 2/", workers[1].process)
    workers[1].process.send_signal(signal.SIGTERM)
    assert [w.process.wait(timeout=120) for w in workers] == [RESTARTABLE_EXIT_CODE] * 2
    for worker in _start([command, command], tmp_path / "rerun"):
        assert worker.process.wait(timeout=300) == 0, worker.log.read_text()[-3000:]
    first = tf.train.load_checkpoint(str(straight / f"ckpt-{STEPS}"))
    second = tf.train.load_checkpoint(str(output_dir / f"ckpt-{STEPS}"))
    names = set(first.get_variable_to_shape_map()) - {"save_counter/.ATTRIBUTES/VARIABLE_VALUE"}
    for name in names:
        np.testing.assert_array_equal(first.get_tensor(name), second.get_tensor(name), name)
