"""Real t2t-trainer processes, stopped and rerun: a run ends as if never interrupted.

A SIGTERM (what a preempted machine gets) makes the trainer save the step it
is at and exit with status 143, also when it comes during a dev evaluation;
a SIGKILL leaves the newest periodic checkpoint and no stale lock (while it
ran, a second trainer on its directory was refused). Under --deterministic the
rerun restores the weights, the optimizer and the dropout seeds, and skips
the batches already trained on, so its final checkpoint equals, bit for bit,
that of a run of the same steps never stopped. One run on two mirrored devices
goes through all of it: the general path, of which one device is the case of
one replica.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from binaries import run_in_process
from trainer_processes import checkpoint_steps, lock_is_free, trainer_command, wait_for_line

from t2t_keras.errors import UserError
from t2t_keras.termination import RESTARTABLE_EXIT_CODE
from t2t_keras.training.lock import output_dir_lock

# Saved every 5 steps. Terminated after step 1, then in the dev evaluation of
# step 6, killed once ckpt-10 is written; the last rerun trains the rest.
STEPS = 20
# How many saves wrote the directory: not training state.
SAVE_COUNTER = "save_counter/.ATTRIBUTES/VARIABLE_VALUE"
EVALUATE_AT_6 = ("--eval_every_steps=6", "--eval_bleu_examples=500")  # Seconds of decoding.


def _terminate(command: list[str], output_dir: Path, log: Path, when: str) -> int:
    """SIGTERM once `when` is logged: ckpt-N of the step it is at, status 143."""
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        wait_for_line(log, when, process)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == RESTARTABLE_EXIT_CODE, log.read_text()[-3000:]
    exit_seconds = time.monotonic() - sent
    text = log.read_text()
    found = re.search(
        r"terminated by SIGTERM at step (\d+); checkpoint ckpt-\1 written; rerun the same "
        r"command to resume",
        text,
    )
    assert found, text[-3000:]
    step = int(found.group(1))
    assert step % 5  # Between two periodic saves.
    assert max(checkpoint_steps(output_dir)) == step
    assert lock_is_free(output_dir)
    assert exit_seconds < 20
    return step


def _terminate_in_evaluation(command: list[str], output_dir: Path, log: Path) -> int:
    step = _terminate(command, output_dir, log, r"Evaluating on the dev split at step 6\.")
    text = log.read_text()
    assert step == 6
    assert "The dev evaluation at step 6 was interrupted: not recorded." in text
    assert "eval at step 6:" not in text  # Nor written to the eval summaries.
    return step


def _kill_after_checkpoint(command: list[str], output_dir: Path, step: int) -> None:
    """SIGKILL once ckpt-<step> is written; meanwhile a second trainer is refused."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        latest = tf.train.latest_checkpoint(str(output_dir))
        if latest and int(latest.rsplit("-", 1)[1]) >= step:
            break
        time.sleep(0.05)
    in_use = rf"in use by another t2t-trainer \(process {process.pid} on"
    with pytest.raises(UserError, match=in_use), output_dir_lock(str(output_dir)):
        pass
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL, "the trainer ended before it was killed"
    assert 10 <= max(checkpoint_steps(output_dir)) < STEPS
    assert lock_is_free(output_dir)  # The lock went with the process: none is stale.


def test_terminated_killed_and_resumed_ends_as_if_never_interrupted(
    number_words_data: Path, tmp_path: Path
) -> None:
    straight_dir, stopped_dir = tmp_path / "straight", tmp_path / "stopped"
    straight = subprocess.Popen(
        trainer_command(number_words_data, straight_dir, devices=2),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    command = trainer_command(number_words_data, stopped_dir, devices=2)
    _terminate(command, stopped_dir, tmp_path / "terminated.log", r"step 1/")
    # Evaluating reads the weights and changes none: the straight run has no evaluation.
    _terminate_in_evaluation([*command, *EVALUATE_AT_6], stopped_dir, tmp_path / "in_eval.log")
    _kill_after_checkpoint(command, stopped_dir, 10)
    stopped_at = max(checkpoint_steps(stopped_dir))

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = int(re.search(r"Resumed from .*ckpt-(\d+)\.", rerun.stderr).group(1))
    assert resumed == stopped_at
    assert f"Skipping the {resumed} batches per replica that steps 1-{resumed}" in rerun.stderr
    assert checkpoint_steps(stopped_dir)[-1] == STEPS

    _, stderr = straight.communicate(timeout=600)
    assert straight.returncode == 0, stderr[-3000:]
    first = tf.train.load_checkpoint(str(straight_dir / f"ckpt-{STEPS}"))
    second = tf.train.load_checkpoint(str(stopped_dir / f"ckpt-{STEPS}"))
    names = set(first.get_variable_to_shape_map())
    assert names == set(second.get_variable_to_shape_map())
    assert sum("seeds/" in name for name in names) > 10  # Dropout's seed states are kept.
    for name in names - {SAVE_COUNTER}:  # The stopped run saved more often.
        np.testing.assert_array_equal(first.get_tensor(name), second.get_tensor(name), name)


def test_a_resumed_auto_run_keeps_the_precision_it_started_with(
    number_words_data: Path, tmp_path: Path
) -> None:
    # auto times a product at start-up; a busy machine must not switch a resumed run.
    output_dir = tmp_path / "auto"
    auto = [
        arg for arg in trainer_command(number_words_data, output_dir)[1:]
        if not arg.startswith(("--mixed_precision", "--cpu_devices", "--distribution_strategy"))
    ]  # fmt: skip
    auto.append("--distribution_strategy=one_device")
    first = run_in_process("t2t-trainer", *auto, "--train_steps=1")
    assert first.returncode == 0, first.stderr[-3000:]
    run_file = output_dir / "run.json"
    run = json.loads(run_file.read_text(encoding="utf-8"))
    other = {"off": "bf16", "bf16": "off"}[run["mixed_precision"]]
    run_file.write_text(json.dumps({**run, "mixed_precision": other}), encoding="utf-8")
    second = run_in_process("t2t-trainer", *auto, "--train_steps=2")
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"auto: {other}, as this run started (run.json)" in second.stderr
    assert json.loads(run_file.read_text(encoding="utf-8"))["mixed_precision"] == other
