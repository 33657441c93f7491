"""A damaged newest checkpoint: resuming and decoding fall back to the newest that reads whole."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.run.intact import DamagedCheckpointError, damage
from t2t_keras.run.loading import load_trained
from t2t_keras.run.weights import build_model, make_checkpoint
from t2t_keras.training import optimizer_from_hparams
from t2t_keras.training.averaging import average_checkpoints
from t2t_keras.training.checkpoints import CheckpointSaver

HPARAMS = dataclasses.replace(
    transformer_tiny(), vocab_size=30, num_encoder_layers=1, num_decoder_layers=1
)


def _truncate_data(prefix: Path) -> None:
    (data,) = prefix.parent.glob(f"{prefix.name}.data-*")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])


def _flip_two_bytes(prefix: Path) -> None:
    (data,) = prefix.parent.glob(f"{prefix.name}.data-*")
    content = bytearray(data.read_bytes())
    for offset in (len(content) // 3, 2 * len(content) // 3):
        content[offset] ^= 0xFF
    data.write_bytes(bytes(content))


def _truncate_index(prefix: Path) -> None:
    index = prefix.parent / f"{prefix.name}.index"
    index.write_bytes(index.read_bytes()[:40])


DAMAGES: dict[str, Callable[[Path], None]] = {
    "data file truncated": _truncate_data,
    "two bytes flipped": _flip_two_bytes,
    "index file truncated": _truncate_index,
}


def _saver(directory: Path) -> tuple[CheckpointSaver, tf.keras.Model]:
    model = build_model("transformer", HPARAMS, use_xla=False)
    optimizer = optimizer_from_hparams(HPARAMS)
    optimizer.build(model.trainable_variables)
    checkpoint = make_checkpoint(model, optimizer, seed_states=True)
    return CheckpointSaver(checkpoint, str(directory), 5, 10, 0), model


@pytest.fixture
def three_checkpoints(tmp_path: Path) -> tuple[Path, dict[int, list[np.ndarray]]]:
    """ckpt-10, -20 and -30, each with other weights; returns the weights of each."""
    saver, model = _saver(tmp_path)
    weights = {}
    for step in (10, 20, 30):
        model.set_weights([w + step for w in model.get_weights()])
        saver.save(step)
        weights[step] = model.get_weights()
    return tmp_path, weights


@pytest.mark.parametrize("what", list(DAMAGES))
def test_resume_falls_back_to_the_newest_checkpoint_that_reads(
    three_checkpoints: tuple[Path, dict[int, list[np.ndarray]]],
    what: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    directory, weights = three_checkpoints
    DAMAGES[what](directory / "ckpt-30")
    assert damage(str(directory / "ckpt-30")) is not None
    saver, model = _saver(directory)
    with caplog.at_level(logging.WARNING):
        assert saver.restore() == str(directory / "ckpt-20")
    for restored, saved in zip(model.get_weights(), weights[20], strict=True):
        np.testing.assert_array_equal(restored, saved)
    (warning,) = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert "ckpt-30" in warning and "resuming from" in warning and "ckpt-20" in warning
    # The damaged files are kept; the state file no longer points at them.
    assert (directory / "ckpt-30.index").exists()
    assert tf.train.latest_checkpoint(str(directory)).endswith("ckpt-20")
    assert saver.save(25).endswith("ckpt-25")


def test_a_damaged_state_file_is_rebuilt_from_the_checkpoints(
    three_checkpoints: tuple[Path, dict[int, list[np.ndarray]]],
) -> None:
    directory, weights = three_checkpoints
    (directory / "checkpoint").write_bytes(b"\x00garbage {{{")
    saver, model = _saver(directory)
    assert saver.restore() == str(directory / "ckpt-30")
    np.testing.assert_array_equal(model.get_weights()[0], weights[30][0])
    assert tf.train.latest_checkpoint(str(directory)).endswith("ckpt-30")


def test_no_checkpoint_that_reads_is_an_error_not_a_fresh_start(
    three_checkpoints: tuple[Path, dict[int, list[np.ndarray]]],
) -> None:
    directory, _ = three_checkpoints
    for step in (10, 20, 30):
        _truncate_data(directory / f"ckpt-{step}")
    saver, _ = _saver(directory)
    with pytest.raises(DamagedCheckpointError, match="no checkpoint in .* reads completely"):
        saver.restore()


def test_a_checkpoint_that_reads_but_does_not_fit_is_no_damage(
    three_checkpoints: tuple[Path, dict[int, list[np.ndarray]]],
) -> None:
    directory, _ = three_checkpoints
    wider = dataclasses.replace(HPARAMS, d_ff=64)
    model = build_model("transformer", wider, use_xla=False)
    saver = CheckpointSaver(make_checkpoint(model), str(directory), 5, 10, 0)
    with pytest.raises(UserError, match="ckpt-30 does not fit this model"):
        saver.restore()


def test_the_decoder_falls_back_too_but_not_from_a_checkpoint_named(
    trained_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    output_dir = tmp_path / "train"
    shutil.copytree(trained_dir, output_dir)
    newest = Path(tf.train.latest_checkpoint(str(output_dir)))
    _truncate_data(newest)
    with caplog.at_level(logging.WARNING):
        trained = load_trained(str(output_dir), use_xla=False)
    assert trained.checkpoint != str(newest)
    assert any(
        str(newest) in r.getMessage() and trained.checkpoint in r.getMessage()
        for r in caplog.records
    )
    with pytest.raises(DamagedCheckpointError, match="cannot be read .* damaged"):
        load_trained(str(output_dir), checkpoint_path=str(newest), use_xla=False)


def test_a_checkpoint_without_seed_states_resumes_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = build_model("transformer", HPARAMS, use_xla=False)
    optimizer = optimizer_from_hparams(HPARAMS)
    optimizer.build(model.trainable_variables)
    make_checkpoint(model, optimizer).write(str(tmp_path / "ckpt-10"))
    tf.compat.v1.train.update_checkpoint_state(str(tmp_path), "ckpt-10")
    saver, _ = _saver(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert saver.restore() == str(tmp_path / "ckpt-10")
    assert "holds no dropout seed states" in caplog.text


@pytest.mark.parametrize("what", ["data", "index"])
def test_averaging_a_damaged_checkpoint_names_it(
    trained_dir: Path, tmp_path: Path, what: str
) -> None:
    output_dir = tmp_path / "train"
    shutil.copytree(trained_dir, output_dir)
    newest = Path(tf.train.latest_checkpoint(str(output_dir)))
    # Cut early: the model's weights come first, the optimizer's slots (not averaged) after.
    (damaged,) = output_dir.glob(f"{newest.name}.{what}*")
    damaged.write_bytes(damaged.read_bytes()[:64])
    with pytest.raises(DamagedCheckpointError, match=f"{newest} cannot be read .* damaged"):
        average_checkpoints(str(output_dir), 2)
    assert not (output_dir / "averaged").exists()
