"""How the training loop answers a termination signal, alone or as one worker of many.

One process (one device or mirrored ones): after a step, if a signal came,
save that step and stop (`t2t_keras.termination` covers the phases where
nothing is unsaved).

Several workers (MultiWorkerMirroredStrategy): a save is a collective every
worker joins, so the workers must agree on the step. TensorFlow's
PreemptionCheckpointHandler does that: the signalled worker publishes the
step to stop at through the coordination service, every worker saves it and
stops. A worker that dies without a word (SIGKILL, a lost machine) stops
sending heartbeats; the coordination service then fails the collectives of
the others, which stop with `WorkerLost` instead of waiting forever.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Callable
from typing import Any, NoReturn

import tensorflow as tf
from absl import logging

from t2t_keras.termination import Terminated, Termination, WorkerLost

# What a collective's error says when a peer is gone: its connection failed, or
# the coordination service found it silent and aborted every collective.
_LOST = re.compile(
    r"Collective ops is aborted|stopped sending heartbeats|failed to connect|"
    r"Connection reset|Connection refused|Socket closed|coordination service"
)
_TASK = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")
# The PreemptionCheckpointHandler's threads that poll the coordination service.
_WATCHERS = ("PeerTerminationWatcher", "WorkerTerminationSignalWatcher")


class Guard:
    """Runs training steps; after each, stops the way the strategy needs on a signal.

    Args:
      termination: the process's termination signals.
      save: saves the global step given; returns the checkpoint's path (None off the chief).
    """

    def __init__(self, termination: Termination, save: Callable[[int], str | None]) -> None:
        self.termination = termination
        self.save = save

    def run(self, train_step: Callable[[Any], Any], iterator: Any) -> Any:
        return train_step(iterator)

    def after_step(self, step: int) -> None:
        """Saves `step` and raises Terminated if a termination signal came."""
        if self.termination.requested():
            self.stop(step)

    def stop(self, step: int) -> NoReturn:
        """Saves `step` and raises Terminated."""
        raise self._terminated(step, self.save(step))

    def _terminated(self, step: int, path: str | None, hard_exit: bool = False) -> Terminated:
        """The way out after saving `step` to `path` (None: the chief wrote it)."""
        line = self.termination.stopped_line(step, path or f"ckpt-{step}", chief=path is not None)
        return Terminated(line, hard_exit)


class ClusterGuard(Guard):
    """One worker of a MultiWorkerMirroredStrategy job: every worker saves the same step.

    Args:
      strategy: the MultiWorkerMirroredStrategy.
      termination: the process's termination signals.
      save: saves the global step given (every worker calls it; the chief's lands).
      global_step: the step trained so far.
      output_dir: where the chief writes checkpoints.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        termination: Termination,
        save: Callable[[int], str | None],
        global_step: Callable[[], int],
        output_dir: str,
    ) -> None:
        super().__init__(termination, save)
        self.strategy = strategy
        self.global_step = global_step
        self.output_dir = output_dir
        termination.coordinate()
        _quiet_peer_watchers()
        # The handler adds a counter to the checkpoint it is given and restores it: give
        # it one of its own that is never written, and save ours through save_fn.
        self._scratch = tempfile.TemporaryDirectory(prefix="t2t_preemption_")  # Removed with self.
        scratch = tf.train.CheckpointManager(tf.train.Checkpoint(), self._scratch.name, 1)
        self._saved: str | None = None
        self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            strategy.cluster_resolver,
            scratch,
            termination_config=tf.distribute.experimental.TerminationConfig(
                termination_watcher_fn=termination.requested,
                exit_fn=self._exit,
                grace_period=0,
                save_fn=self._save,
            ),
        )

    def run(self, train_step: Callable[[Any], Any], iterator: Any) -> Any:
        try:
            return self.handler.run(train_step, iterator)
        except tf.errors.OpError as error:
            if isinstance(error, tf.errors.UnavailableError) or _LOST.search(error.message):
                raise WorkerLost(self._lost_message(error)) from None
            raise

    def after_step(self, step: int) -> None:
        del step  # The handler stops every worker at the step they agree on.

    def _save(self) -> None:
        self._saved = self.save(self.global_step())

    def _exit(self) -> NoReturn:
        raise self._terminated(self.global_step(), self._saved, hard_exit=True)

    def _lost_message(self, error: tf.errors.OpError) -> str:
        resolver = self.strategy.cluster_resolver
        workers = resolver.cluster_spec().as_dict()
        named = []
        for job, index in dict.fromkeys(_TASK.findall(error.message)):
            addresses = workers.get(job, [])
            where = f" at {addresses[int(index)]}" if int(index) < len(addresses) else ""
            if (job, int(index)) != (resolver.task_type, resolver.task_id):
                named.append(f"{job} {index}{where}")
        who = " and ".join(named) or "another worker (or the coordination service on worker 0)"
        newest = tf.train.latest_checkpoint(self.output_dir)
        resume = f"from {newest}" if newest else "from the start (no checkpoint yet)"
        return (
            f"{who} stopped answering after step {self.global_step()}: it crashed, was killed "
            "or lost its machine, so this worker stops too rather than wait for it. Restart "
            f"every worker with the same command: training resumes {resume}. (TensorFlow "
            f"said: {_reason(error.message)})"
        )


def _quiet_peer_watchers() -> None:
    """One log line, not a traceback, when the handler's watcher threads lose the cluster.

    They poll the coordination service; when a worker dies, the service (or
    the connection to it) fails them while the training step reports the loss.
    """
    previous = threading.excepthook

    def hook(info: threading.ExceptHookArgs) -> None:
        name = info.thread.name if info.thread else ""
        if name.startswith(_WATCHERS) and isinstance(info.exc_value, tf.errors.OpError):
            logging.info("%s stopped: %s", name, _reason(info.exc_value.message))
            return
        previous(info)

    threading.excepthook = hook


def _reason(message: str) -> str:
    """The line of a failed collective's error that says why, without its traceback."""
    lines = [line.strip() for line in message.splitlines()]
    for line in lines:
        if line.startswith(("Collective ops is aborted by", "The following tasks are unhealthy")):
            return line
    said = [line for line in lines if line and not line.startswith(("File ", "[[", "Detected"))]
    return said[-1] if said else message[:200]


def make_guard(
    strategy: tf.distribute.Strategy,
    termination: Termination,
    save: Callable[[int], str | None],
    global_step: Callable[[], int],
    output_dir: str,
) -> Guard:
    """The guard for `strategy`: a cluster's for MultiWorkerMirroredStrategy."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and getattr(
        strategy.cluster_resolver, "task_type", None
    ):
        return ClusterGuard(strategy, termination, save, global_step, output_dir)
    return Guard(termination, save)
