"""What a user sees while training: progress lines, TensorBoard summaries, the profiler."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from absl import logging

from t2t_keras.training.config import TrainConfig


class Progress:
    """Logs every `log_every_steps` and writes summaries (on the chief).

    Each log also appends a point to `loss_curve`: the step, wall seconds since
    training started, target tokens seen so far, and the training loss per
    target token over the steps since the last log (not only the last step's).

    Args:
      output_dir: summaries go to output_dir (training) and output_dir/eval.
      config: train_steps, log_every_steps, profile_steps.
      first_step: the step training starts (or resumes) from.
      optimizer: for the learning rate.
      chief: only the chief writes summaries.
    """

    def __init__(
        self, output_dir: str, config: TrainConfig, first_step: int, optimizer: Any, chief: bool
    ) -> None:
        self.config = config
        self.optimizer = optimizer
        self.output_dir = output_dir
        self.first_step = first_step
        self.writer = tf.summary.create_file_writer(output_dir) if chief else None
        self.eval_writer = (
            tf.summary.create_file_writer(os.path.join(output_dir, "eval")) if chief else None
        )
        self.started = self.window_start = time.monotonic()
        self.window = _empty_window()
        self.totals = {"source_tokens": 0.0, "target_tokens": 0.0}
        self.loss_curve: list[dict[str, float]] = []
        self.profiling = False

    def maybe_profile(self, step: int) -> None:
        """Starts or stops the profiler around config.profile_steps."""
        if not self.config.profile_steps or not self.writer:
            return
        first, last = self.config.profile_steps
        if step == first and not self.profiling:
            tf.profiler.experimental.start(os.path.join(self.output_dir, "profile"))
            self.profiling = True
        elif step > last and self.profiling:
            tf.profiler.experimental.stop()
            self.profiling = False

    def record(self, step: int, metrics: dict[str, float]) -> None:
        """Counts the step's tokens; logs and writes summaries every log_every_steps."""
        for name in ("source_tokens", "target_tokens"):
            self.window[name] += metrics[name]
            self.totals[name] += metrics[name]
        # metrics["loss"] is per target token of the step: weighted back to a sum.
        self.window["loss_sum"] += metrics["loss"] * metrics["target_tokens"]
        self.window["steps"] += 1
        if step % self.config.log_every_steps and step != self.config.train_steps:
            return
        now = time.monotonic()
        seconds = max(now - self.window_start, 1e-9)
        source_rate = self.window["source_tokens"] / seconds
        target_rate = self.window["target_tokens"] / seconds
        steps_per_second = self.window["steps"] / seconds
        remaining = (self.config.train_steps - step) / max(steps_per_second, 1e-9)
        if self.config.max_seconds:
            remaining = min(remaining, self.config.max_seconds - (now - self.started))
        learning_rate = float(tf.convert_to_tensor(self.optimizer.learning_rate))
        loss, grad_norm = metrics["loss"], metrics["grad_norm"]
        self.loss_curve.append(
            {
                "step": step,
                "seconds": now - self.started,
                "target_tokens": self.totals["target_tokens"],
                "loss": self.window["loss_sum"] / max(self.window["target_tokens"], 1.0),
            }
        )
        logging.info(
            "step %d/%d  loss %.4f  lr %.3g  grad_norm %.3g  tokens/s %.0f (source %.0f, "
            "target %.0f)  steps/s %.2f  ETA %s",
            step, self.config.train_steps, loss, learning_rate, grad_norm,
            source_rate + target_rate, source_rate, target_rate, steps_per_second,
            _duration(remaining),
        )  # fmt: skip
        if self.writer:
            with self.writer.as_default(step=step):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("learning_rate", learning_rate)
                tf.summary.scalar("grad_norm", grad_norm)
                tf.summary.scalar("tokens_per_second/source", source_rate)
                tf.summary.scalar("tokens_per_second/target", target_rate)
                tf.summary.scalar("steps_per_second", steps_per_second)
            self.writer.flush()
        self.window_start = now
        self.window = _empty_window()

    def evaluate(self, step: int, evaluator: Callable[[], dict[str, float]]) -> dict[str, float]:
        """Runs the evaluator, logs its metrics and writes them to output_dir/eval.

        The time it takes is left out of the training throughput.
        """
        logging.info("Evaluating on the dev split at step %d.", step)
        started = time.monotonic()
        metrics = evaluator()
        self.window_start += time.monotonic() - started
        if not metrics:
            return metrics
        shown = "  ".join(f"{name} {value:.4f}" for name, value in metrics.items())
        logging.info("eval at step %d: %s", step, shown)
        if self.eval_writer:
            with self.eval_writer.as_default(step=step):
                for name, value in metrics.items():
                    tf.summary.scalar(name, value)
            self.eval_writer.flush()
        return metrics

    def finish(self, result: Any) -> None:
        """Sets result.tokens_per_second and result.loss_curve; logs the run's summary."""
        if self.profiling:
            tf.profiler.experimental.stop()
        seconds = max(time.monotonic() - self.started, 1e-9)
        tokens = self.totals["source_tokens"] + self.totals["target_tokens"]
        result.tokens_per_second = tokens / seconds
        result.target_tokens_per_second = self.totals["target_tokens"] / seconds
        result.loss_curve = self.loss_curve
        logging.info(
            "Trained %d steps (to step %d) in %s, %.0f tokens/s; dev %s; checkpoint %s.",
            result.step - self.first_step, result.step, _duration(seconds),
            result.tokens_per_second,
            ", ".join(f"{n} {v:.4f}" for n, v in result.eval.items()) or "not evaluated",
            result.checkpoint,
        )  # fmt: skip


def _empty_window() -> dict[str, float]:
    """The sums of a log interval: tokens, summed token losses and steps."""
    return {"source_tokens": 0.0, "target_tokens": 0.0, "loss_sum": 0.0, "steps": 0}


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
