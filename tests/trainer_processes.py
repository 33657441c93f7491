"""Real t2t-trainer processes for the stop-and-resume tests: the command, and what to watch."""

from __future__ import annotations

import fcntl
import re
import subprocess
import sys
import time
from pathlib import Path

import tensorflow as tf

PROBLEM = "translate_number_words_en_de"


def trainer_command(data: Path, output_dir: Path, devices: int = 1) -> list[str]:
    """A 1-layer transformer_tiny, 20 steps under --deterministic, saved every 5, logged each."""
    return [
        str(Path(sys.executable).parent / "t2t-trainer"),
        f"--problem={PROBLEM}",
        "--hparams_set=transformer_tiny",
        # Smaller still: each process traces a third less.
        "--hparams=num_encoder_layers=1,num_decoder_layers=1,d_model=32,d_ff=64,batch_size=1024",
        f"--data_dir={data}",
        f"--output_dir={output_dir}",
        "--train_steps=20",
        "--save_checkpoints_steps=5",
        "--keep_checkpoint_max=3",
        "--eval_steps=1",
        "--eval_every_steps=0",
        "--eval_bleu_examples=0",
        "--log_step_count_steps=1",
        "--random_seed=1",
        "--deterministic",
        "--xla=off",
        # Runs compared bit for bit need one precision, whatever auto would time on a busy machine.
        "--mixed_precision=off",
        f"--cpu_devices={devices}",
        "--distribution_strategy=mirrored",
    ]


def checkpoint_steps(output_dir: Path) -> list[int]:
    """Every checkpoint the state file lists reads completely; returns their steps."""
    state = tf.train.get_checkpoint_state(str(output_dir))
    steps = []
    for path in state.all_model_checkpoint_paths:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
        steps.append(int(path.rsplit("-", 1)[1]))
    return steps


def wait_for_line(log: Path, pattern: str, process: subprocess.Popen) -> re.Match:
    """Waits until the process's stderr (written to `log`) holds a line matching `pattern`."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if found := re.search(pattern, log.read_text(errors="replace"), re.MULTILINE):
            return found
        assert process.poll() is None, f"ended before {pattern!r}: {log.read_text()[-3000:]}"
        time.sleep(0.02)
    raise AssertionError(f"no {pattern!r} in 300 s")


def lock_is_free(output_dir: Path) -> bool:
    with open(output_dir / ".lock", "a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(file, fcntl.LOCK_UN)
        return True
