"""Real t2t-trainer processes: kill -9 then rerun resumes; deterministic reruns match."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import tensorflow as tf

PROBLEM = "translate_number_words_en_de"

# Killed at step 30 or later; the rerun trains the rest.
STEPS = 80


def _trainer(data: Path, output_dir: Path) -> list[str]:
    return [
        str(Path(sys.executable).parent / "t2t-trainer"),
        f"--problem={PROBLEM}",
        "--hparams_set=transformer_tiny",
        f"--data_dir={data}",
        f"--output_dir={output_dir}",
        f"--train_steps={STEPS}",
        "--save_checkpoints_steps=10",
        "--keep_checkpoint_max=3",
        "--eval_steps=1",
        "--eval_every_steps=0",
        "--eval_bleu_examples=0",
        "--log_step_count_steps=10",
        "--random_seed=1",
    ]


def _assert_all_checkpoints_load(output_dir: Path) -> list[int]:
    """Every checkpoint the state file lists reads completely; returns their steps."""
    state = tf.train.get_checkpoint_state(str(output_dir))
    steps = []
    for path in state.all_model_checkpoint_paths:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
        steps.append(int(path.rsplit("-", 1)[1]))
    return steps


def test_kill_9_then_rerun_resumes(number_words_data: Path, tmp_path: Path) -> None:
    command = _trainer(number_words_data, tmp_path)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        latest = tf.train.latest_checkpoint(str(tmp_path))
        if latest and int(latest.rsplit("-", 1)[1]) >= 30:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL, "the trainer ended before it was killed"
    killed_at = max(_assert_all_checkpoints_load(tmp_path))
    assert 30 <= killed_at < STEPS

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = re.search(r"Resumed from .*ckpt-(\d+)\.", rerun.stderr)
    assert resumed and int(resumed.group(1)) >= killed_at
    first_logged = re.search(rf"step (\d+)/{STEPS} ", rerun.stderr)
    assert int(first_logged.group(1)) > int(resumed.group(1))
    assert f"(to step {STEPS})" in rerun.stderr
    assert _assert_all_checkpoints_load(tmp_path) == [STEPS - 20, STEPS - 10, STEPS]


def test_deterministic_runs_write_identical_checkpoints(
    number_words_data: Path, tmp_path: Path
) -> None:
    # The two runs start at once: separate processes, so nothing is shared but the seed.
    runs = {}
    for run in ("first", "second"):
        command = [
            *_trainer(number_words_data, tmp_path / run)[:5],
            "--train_steps=10",
            "--eval_steps=1",
            "--eval_bleu_examples=0",
            "--deterministic",
            "--random_seed=1",
        ]
        runs[run] = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    checkpoints = []
    for run, process in runs.items():
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr[-3000:]
        checkpoints.append(tf.train.load_checkpoint(str(tmp_path / run / "ckpt-10")))
    first, second = checkpoints
    names = [n for n in first.get_variable_to_shape_map() if "CHECKPOINTABLE" not in n]
    assert len(names) > 50
    for name in names:
        assert (first.get_tensor(name) == second.get_tensor(name)).all(), name
