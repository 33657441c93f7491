"""Progress: one loss-curve point per log, its loss per target token of the interval."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from t2t_keras.training.config import TrainConfig
from t2t_keras.training.progress import Progress
from t2t_keras.training.trainer import TrainResult


def test_each_log_adds_the_interval_loss_per_target_token(tmp_path: Path) -> None:
    config = TrainConfig(train_steps=5, log_every_steps=2)
    optimizer = SimpleNamespace(learning_rate=0.1)
    progress = Progress(str(tmp_path), config, first_step=0, optimizer=optimizer, chief=False)
    # (loss per target token, target tokens) of steps 1 to 5.
    for step, (loss, tokens) in enumerate(
        [(2.0, 10), (4.0, 30), (1.0, 20), (3.0, 20), (5.0, 5)], 1
    ):
        metrics = {"loss": loss, "target_tokens": tokens, "source_tokens": 7.0, "grad_norm": 1.0}
        progress.record(step, metrics)

    curve = progress.loss_curve
    # Every 2 steps, and at train_steps.
    assert [point["step"] for point in curve] == [2, 4, 5]
    assert [point["target_tokens"] for point in curve] == [40, 80, 85]
    assert [point["loss"] for point in curve] == pytest.approx([140 / 40, 80 / 40, 5.0])
    seconds = [point["seconds"] for point in curve]
    assert 0 <= seconds[0] <= seconds[1] <= seconds[2]

    result = TrainResult(model=None, first_step=0, step=5)
    progress.finish(result)
    assert result.loss_curve == curve
