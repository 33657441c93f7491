"""Real t2t-trainer processes: killed with SIGKILL and rerun, a run ends as if never interrupted.

Under --deterministic the resumed run restores the weights, the optimizer and
the dropout seeds, and skips the batches already trained on, so its final
checkpoint equals, bit for bit, that of a run of the same steps never
killed: on one device and on two mirrored ones.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

PROBLEM = "translate_number_words_en_de"

# Killed once ckpt-10 is written; the rerun trains the rest.
STEPS = 20


def _trainer(data: Path, output_dir: Path, devices: int) -> list[str]:
    return [
        str(Path(sys.executable).parent / "t2t-trainer"),
        f"--problem={PROBLEM}",
        "--hparams_set=transformer_tiny",
        # Smaller still: each process traces a third less.
        "--hparams=num_encoder_layers=1,num_decoder_layers=1,d_model=32,d_ff=64,batch_size=1024",
        f"--data_dir={data}",
        f"--output_dir={output_dir}",
        f"--train_steps={STEPS}",
        "--save_checkpoints_steps=5",
        "--keep_checkpoint_max=3",
        "--eval_steps=1",
        "--eval_every_steps=0",
        "--eval_bleu_examples=0",
        "--log_step_count_steps=5",
        "--random_seed=1",
        "--deterministic",
        "--xla=off",
        f"--cpu_devices={devices}",
        "--distribution_strategy=mirrored",
    ]


def _checkpoint_steps(output_dir: Path) -> list[int]:
    """Every checkpoint the state file lists reads completely; returns their steps."""
    state = tf.train.get_checkpoint_state(str(output_dir))
    steps = []
    for path in state.all_model_checkpoint_paths:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
        steps.append(int(path.rsplit("-", 1)[1]))
    return steps


def _kill_after_checkpoint(process: subprocess.Popen, output_dir: Path, step: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        latest = tf.train.latest_checkpoint(str(output_dir))
        if latest and int(latest.rsplit("-", 1)[1]) >= step:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL, "the trainer ended before it was killed"


@pytest.mark.parametrize("devices", [1, 2])
def test_killed_and_resumed_ends_as_if_never_interrupted(
    number_words_data: Path, tmp_path: Path, devices: int
) -> None:
    straight_dir, killed_dir = tmp_path / "straight", tmp_path / "killed"
    straight = subprocess.Popen(
        _trainer(number_words_data, straight_dir, devices),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    command = _trainer(number_words_data, killed_dir, devices)
    killed = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _kill_after_checkpoint(killed, killed_dir, 10)
    killed_at = max(_checkpoint_steps(killed_dir))
    assert 10 <= killed_at < STEPS

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = int(re.search(r"Resumed from .*ckpt-(\d+)\.", rerun.stderr).group(1))
    assert resumed >= killed_at
    assert f"Skipping the {resumed} batches per replica that steps 1-{resumed}" in rerun.stderr
    assert _checkpoint_steps(killed_dir) == [STEPS - 10, STEPS - 5, STEPS]

    _, stderr = straight.communicate(timeout=600)
    assert straight.returncode == 0, stderr[-3000:]
    first = tf.train.load_checkpoint(str(straight_dir / f"ckpt-{STEPS}"))
    second = tf.train.load_checkpoint(str(killed_dir / f"ckpt-{STEPS}"))
    names = first.get_variable_to_shape_map()
    assert names == second.get_variable_to_shape_map()
    assert sum("seeds/" in name for name in names) > 10  # Dropout's seed states are kept.
    for name in names:
        np.testing.assert_array_equal(first.get_tensor(name), second.get_tensor(name), name)
