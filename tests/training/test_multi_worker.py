"""Two worker processes on localhost under MultiWorkerMirroredStrategy (TF_CONFIG)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from t2t_keras.models import TransformerHParams
from t2t_keras.run.weights import build_model, restore_model

WORKER = Path(__file__).with_name("multi_worker_main.py")
STEPS = 4


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("localhost", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def test_two_workers_end_with_identical_weights(number_words_data: Path, tmp_path: Path) -> None:
    cluster = {"worker": [f"localhost:{port}" for port in _free_ports(2)]}
    output_dir = tmp_path / "train"
    workers = []
    for index in range(2):
        config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        env = {**os.environ, "TF_CONFIG": json.dumps(config)}
        command = [
            sys.executable, str(WORKER), str(number_words_data), str(output_dir),
            str(tmp_path / f"worker_{index}.npz"), str(STEPS),
        ]  # fmt: skip
        workers.append(subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True))
    for worker in workers:
        _, errors = worker.communicate(timeout=300)
        assert worker.returncode == 0, errors[-3000:]

    chief, other = (np.load(tmp_path / f"worker_{i}.npz") for i in range(2))
    assert len(chief.files) == len(other.files) > 0
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name])

    # Only the chief wrote output_dir; its newest checkpoint is the final step and loads.
    latest = tf.train.latest_checkpoint(str(output_dir))
    assert latest.endswith(f"ckpt-{STEPS}")
    assert not list(output_dir.glob(".scratch_*/ckpt-*"))
    hparams = TransformerHParams.from_json((output_dir / "hparams.json").read_text())
    model = build_model("transformer", hparams)
    restore_model(model, latest)
    for restored, name in zip(model.get_weights(), chief.files, strict=True):
        np.testing.assert_array_equal(restored, chief[name])
