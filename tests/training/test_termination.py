"""Termination signals: at start-up in a real t2t-trainer process, and the flag.

(Between two saves, during a dev evaluation, on one and on two mirrored
devices, and the bit-for-bit resume after them: test_resume.py.)
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
import tensorflow as tf
from binaries import assert_user_error, run_in_process
from trainer_processes import lock_is_free, trainer_command

from t2t_keras.errors import UserError
from t2t_keras.termination import (
    RESTARTABLE_EXIT_CODE,
    EvaluationInterrupted,
    interrupted_evaluation,
    parse_signal,
)


def _start(command: list[str], log: Path) -> subprocess.Popen:
    with open(log, "w") as stderr:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)


def test_a_signal_at_start_up_exits_at_once_with_nothing_to_save(
    number_words_data: Path, tmp_path: Path
) -> None:
    output_dir, log = tmp_path / "train", tmp_path / "stderr.log"
    command = [*trainer_command(number_words_data, output_dir), "--termination_signal=USR1"]
    process = _start(command, log)
    while not (output_dir / ".lock").exists():  # Taken once TensorFlow has loaded.
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.01)
    sent = time.monotonic()
    process.send_signal(signal.SIGUSR1)
    time.sleep(0.05)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # A second signal changes nothing.
    assert process.wait(timeout=60) == RESTARTABLE_EXIT_CODE, log.read_text()[-3000:]
    seconds = time.monotonic() - sent
    text = log.read_text()
    assert "terminated by SIGUSR1 at step 0; no checkpoint yet, nothing to save; rerun" in text
    assert text.count("terminated by") == 1
    assert tf.train.latest_checkpoint(str(output_dir)) is None
    assert lock_is_free(output_dir)
    assert seconds < 5, seconds


@pytest.mark.parametrize(
    ("name", "expected"),
    [("SIGUSR1", signal.SIGUSR1), ("usr2", signal.SIGUSR2), ("15", signal.SIGTERM)],
)
def test_termination_signal_names(name: str, expected: signal.Signals) -> None:
    assert parse_signal(name) == expected


@pytest.mark.parametrize("name", ["SIGKILL", "STOP", "BOGUS", "999", ""])
def test_uncatchable_or_unknown_signals_are_refused(name: str) -> None:
    with pytest.raises(UserError, match="not a signal a process can catch"):
        parse_signal(name)


def test_the_trainer_refuses_a_signal_it_cannot_catch(tmp_path: Path) -> None:
    handler = signal.getsignal(signal.SIGTERM)
    result = run_in_process(
        "t2t-trainer",
        "--termination_signal=SIGKILL",
        "--problem=translate_number_words_en_de",
        f"--data_dir={tmp_path}",
        f"--output_dir={tmp_path / 'train'}",
    )
    assert_user_error(result, "--termination_signal=SIGKILL is not a signal", "SIGUSR1")
    assert not (tmp_path / "train").exists()
    assert signal.getsignal(signal.SIGTERM) is handler  # Given back when the program ends.


def test_an_interruption_raised_through_tensorflows_own_errors_is_still_one() -> None:
    """The signal may land inside TensorFlow code that raises its own error from it
    (tf.function's input binding raises a TypeError): the trainer still sees the
    interruption, saves the step and exits 143, not with a traceback."""
    try:
        try:
            raise EvaluationInterrupted
        except EvaluationInterrupted as interruption:
            raise TypeError("Binding inputs to tf.function failed due to ``.") from interruption
    except TypeError as error:
        assert interrupted_evaluation(error)
    try:
        try:
            raise EvaluationInterrupted
        except EvaluationInterrupted:
            raise ValueError("raised while handling it") from None
    except ValueError as error:  # Raised while handling it, even `from None`: still it.
        assert interrupted_evaluation(error)
    assert not interrupted_evaluation(TypeError("Binding inputs to tf.function failed"))
