"""Termination signals: a preempted trainer saves the step it is at and exits restartably.

Clusters end a job with SIGTERM (or, under SLURM, the signal of `--signal`)
and a grace period before SIGKILL. `Termination` catches those signals.
Nothing here imports TensorFlow, so the handler is in place before it loads.

Two ways out, depending on what the process would lose:

- Nothing unsaved (TensorFlow loading, the data check, building and
  restoring, the first compilation, the batches a --deterministic resume
  skips, an evaluation right after a save): a watcher thread, woken by the
  signal even while the main thread is inside TensorFlow, logs one line and
  exits at once. The newest checkpoint is the whole state.
- Steps trained since the last save: the training loop sees the request
  after the current step (or in the middle of a dev evaluation, which is
  interrupted between batches), saves a checkpoint of that exact step and
  raises `Terminated`, which unwinds through the output_dir lock.

Either way the process exits with `RESTARTABLE_EXIT_CODE`, and rerunning the
same command resumes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from t2t_keras.errors import UserError

# 128 + SIGTERM: what a shell reports for a process SIGTERM ended, and the code
# schedulers and TensorFlow's own preemption handling treat as "restart me".
RESTARTABLE_EXIT_CODE = 143
# EX_TEMPFAIL: another worker of a multi-worker job was lost; restart every worker.
WORKER_LOST_EXIT_CODE = 75

_REFUSED = (signal.SIGKILL, signal.SIGSTOP)


def parse_signal(name: str) -> signal.Signals:
    """The signal a flag names: "SIGUSR1", "USR1" or its number."""
    text = name.strip().upper()
    try:
        chosen = (
            signal.Signals(int(text))
            if text.isdigit()
            else signal.Signals[text if text.startswith("SIG") else f"SIG{text}"]
        )
    except (KeyError, ValueError):
        chosen = None
    if chosen is None or chosen in _REFUSED:
        raise UserError(
            f"--termination_signal={name} is not a signal a process can catch; give a "
            "catchable signal's name or number, e.g. SIGUSR1, USR1 or 10 (SIGKILL and "
            "SIGSTOP cannot be caught; SIGTERM is always handled)."
        )
    return chosen


class Restartable(Exception):
    """A stop that a rerun of the same command recovers from; the binaries exit with `exit_code`.

    Args:
      message: the line (or paragraph) to print.
      hard_exit: leave without Python's teardown (a multi-worker process whose
        peers are gone could hang in it).
    """

    exit_code = RESTARTABLE_EXIT_CODE

    def __init__(self, message: str, hard_exit: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hard_exit = hard_exit


class Terminated(Restartable):
    """Raised by the training loop after it saved the step a termination signal stopped."""


class WorkerLost(Restartable):
    """A multi-worker job lost a worker: this one stops too (restart them all)."""

    exit_code = WORKER_LOST_EXIT_CODE

    def __init__(self, message: str) -> None:
        super().__init__(message, hard_exit=True)


class EvaluationInterrupted(Exception):
    """Raised inside an interruptible evaluation when a termination signal arrives."""


def interrupted_evaluation(error: BaseException) -> bool:
    """Whether `error` is, or was raised from or while handling, an EvaluationInterrupted.

    The signal handler raises between any two Python lines, TensorFlow's
    included, and some of those catch every exception and raise their own
    from it (tf.function's input binding raises a TypeError): the
    interruption is then found among the causes.
    """
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, EvaluationInterrupted):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Termination:
    """The termination signals of one process, and what it has left unsaved.

    Create it in the main thread. The training loop tells it the step trained
    (`trained`) and the step saved (`saved`); it exits at once on a signal
    while the two are equal and nothing is being written (`busy`).
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = (signal.SIGTERM,)) -> None:
        self.signals = tuple(dict.fromkeys(signals))
        self.received: signal.Signals | None = None
        self.received_at = 0.0
        self.trained: int | None = None
        self.saved: int | None = None
        self._fast_exit = self._interrupt_evaluation = True
        self._paused = False
        self._interruptible = False
        self._handled = 0
        self._lock = threading.Lock()
        self._previous: dict[int, Any] = {}
        self._wakeup: tuple[int, int, int] | None = None  # (read, write, the previous fd)

    def __enter__(self) -> Termination:
        return self.install()

    def __exit__(self, *error: object) -> None:
        self.uninstall()

    def install(self) -> Termination:
        """Catches the signals (again, if a library took them over meanwhile).

        Only the main thread can; elsewhere (a program's worker thread) nothing is caught.
        """
        if not self.signals or threading.current_thread() is not threading.main_thread():
            return self
        for number in self.signals:
            previous = signal.signal(number, self._handle)
            self._previous.setdefault(number, previous)
        if self._wakeup is None:
            read, write = os.pipe()
            os.set_blocking(write, False)
            previous_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
            self._wakeup = (read, write, previous_fd)
            threading.Thread(target=self._watch, args=(read,), daemon=True).start()
        return self

    def uninstall(self) -> None:
        """Gives the signals back to their previous handlers; the watcher thread ends."""
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous.clear()
        if self._wakeup is not None:
            _, write, previous_fd = self._wakeup
            signal.set_wakeup_fd(previous_fd)
            os.close(write)  # The watcher reads the end of the pipe and returns.
            self._wakeup = None

    def add_signal(self, number: signal.Signals) -> None:
        """Also treats `number` as a termination signal (e.g. SLURM's --signal=USR1)."""
        if number not in self.signals:
            self.signals += (number,)
            if self._wakeup is not None:
                self._previous.setdefault(number, signal.signal(number, self._handle))

    def requested(self) -> bool:
        """Whether a termination signal arrived."""
        return self.received is not None

    def seconds_since_signal(self) -> float:
        return time.monotonic() - self.received_at if self.received else 0.0

    def coordinate(self) -> Termination:
        """One worker of several: leave only through the training loop, where all save.

        No exit at once, and evaluations are not interrupted (the chief's
        peers wait for it in their next step).
        """
        self._fast_exit = self._interrupt_evaluation = False
        return self

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """No exit at once while the body writes (a checkpoint, an average)."""
        with self._lock:
            self._paused = True
        try:
            yield
        finally:
            self._paused = False

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A signal in the body raises EvaluationInterrupted there (between its ops)."""
        if not self._interrupt_evaluation:
            yield
            return
        if self.requested():
            raise EvaluationInterrupted
        self._interruptible = True
        try:
            yield
        finally:
            self._interruptible = False

    def stopped_line(
        self, step: int, checkpoint: str | None, written: bool = True, chief: bool = True
    ) -> str:
        """The one line a terminated trainer logs.

        Args:
          step: the global step the process stopped at.
          checkpoint: the checkpoint holding that step; None: there is none yet.
          written: whether it was just written (else it was already there).
          chief: False on the workers whose saves the chief writes.
        """
        if self.received:
            why = f"terminated by {self.received.name}"
            after = f" ({self.seconds_since_signal():.1f} s after the signal)"
        else:
            why = "terminated with the other workers (one received a termination signal)"
            after = ""
        if checkpoint is None:
            where = "no checkpoint yet, nothing to save"
        elif not written:
            where = f"checkpoint {os.path.basename(checkpoint)} already holds it"
        else:
            by = "" if chief else " by the chief"
            where = f"checkpoint {os.path.basename(checkpoint)} written{by}"
        then = "start" if checkpoint is None else "resume"
        return f"{why} at step {step}; {where}; rerun the same command to {then}{after}."

    def _record(self, number: int) -> bool:
        """Notes a signal of ours; False for any other signal."""
        if number not in self.signals:
            return False
        if self.received is None:
            self.received, self.received_at = signal.Signals(number), time.monotonic()
        return True

    def _handle(self, number: int, frame: FrameType | None) -> None:
        del frame
        self._record(number)
        self._handled += 1
        if self._handled == 1:
            _log(f"{signal.Signals(number).name} received: stopping after the current step.")
        else:
            _log(f"{signal.Signals(number).name} received again: already stopping, ignored.")
        if self._interruptible:
            self._interruptible = False
            raise EvaluationInterrupted

    def _watch(self, read: int) -> None:
        """Wakes on each signal's byte, whatever the main thread is doing."""
        with contextlib.closing(os.fdopen(read, "rb", buffering=0)) as pipe:
            while data := pipe.read(64):
                if any(self._record(number) for number in data):
                    self._maybe_exit_now()

    def _maybe_exit_now(self) -> None:
        with self._lock:
            if not self._fast_exit or self._paused or self.trained != self.saved:
                return
            checkpoint = None if self.saved is None else f"ckpt-{self.saved}"
            _log(self.stopped_line(self.saved or 0, checkpoint, written=False))
            os._exit(RESTARTABLE_EXIT_CODE)


def _log(message: str) -> None:
    """Written straight to stderr: safe in a signal handler and in a thread about to exit."""
    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    os.write(2, f"{program}: {message}\n".encode())
