"""Checkpoint keys are the variables' paths, the same for every copy of a model."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.run.weights import build_model, make_checkpoint, model_variables, restore_model
from t2t_keras.training import optimizer_from_hparams
from t2t_keras.training.checkpoints import CheckpointSaver

HPARAMS = dataclasses.replace(
    transformer_tiny(), vocab_size=30, num_encoder_layers=1, num_decoder_layers=1
)


def test_keys_do_not_depend_on_what_was_built_before() -> None:
    first, second = build_model("transformer", HPARAMS), build_model("transformer", HPARAMS)
    assert list(model_variables(first)) == list(model_variables(second))
    assert all(key.startswith("transformer/") for key in model_variables(first))
    # Every trainable weight is saved.
    assert len(model_variables(first)) == len(first.trainable_variables)


def test_save_every_steps_keep_newest_and_restore(tmp_path: Path) -> None:
    model = build_model("transformer", HPARAMS)
    optimizer = optimizer_from_hparams(HPARAMS)
    optimizer.build(model.trainable_variables)
    saver = CheckpointSaver(make_checkpoint(model, optimizer), str(tmp_path), 2, 10, 0)
    assert saver.restore() is None
    assert [step for step in range(1, 31) if saver.due(step)] == [10, 20, 30]
    for step in (10, 20, 30):
        optimizer.iterations.assign(step)
        saver.save(step)
    assert sorted(p.name for p in tmp_path.glob("ckpt-*.index")) == [
        "ckpt-20.index",
        "ckpt-30.index",
    ]

    other = build_model("transformer", HPARAMS)
    restore_model(other, str(tmp_path / "ckpt-30"))
    for ours, saved in zip(other.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, saved)
    fresh_optimizer = optimizer_from_hparams(HPARAMS)
    fresh_optimizer.build(other.trainable_variables)
    again = CheckpointSaver(make_checkpoint(other, fresh_optimizer), str(tmp_path), 2, 10, 0)
    assert again.restore() == str(tmp_path / "ckpt-30")
    assert int(fresh_optimizer.iterations.numpy()) == 30


def test_a_checkpoint_of_another_shape_is_refused(tmp_path: Path) -> None:
    model = build_model("transformer", HPARAMS)
    path = make_checkpoint(model).write(str(tmp_path / "ckpt-1"))
    wider = build_model("transformer", dataclasses.replace(HPARAMS, d_ff=64))
    with pytest.raises(UserError, match="does not hold this model's weights"):
        restore_model(wider, path)


def test_save_by_seconds(tmp_path: Path) -> None:
    model = build_model("transformer", HPARAMS)
    saver = CheckpointSaver(make_checkpoint(model), str(tmp_path), 5, 0, every_secs=1)
    assert not saver.due(1)
    time.sleep(1.1)
    assert saver.due(2)
    saver.save(2)
    assert not saver.due(2) and not saver.due(3)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-2")


def test_the_state_file_drops_a_checkpoint_before_its_files_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed while the oldest checkpoint is deleted leaves a state file
    that lists only checkpoints still whole on disk."""
    model = build_model("transformer", HPARAMS)
    saver = CheckpointSaver(make_checkpoint(model), str(tmp_path), 2, 1, 0)
    removed: list[str] = []
    remove = tf.io.gfile.remove

    def checked_remove(path: str) -> None:
        listed = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
        assert not any(path.startswith(f"{prefix}.") for prefix in listed), (path, listed)
        removed.append(path)
        remove(path)

    monkeypatch.setattr(tf.io.gfile, "remove", checked_remove)
    for step in (1, 2, 3):
        saver.save(step)
    assert sorted(Path(path).name.split(".")[0] for path in removed) == ["ckpt-1", "ckpt-1"]
    listed = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
    assert [Path(path).name for path in listed] == ["ckpt-2", "ckpt-3"]
