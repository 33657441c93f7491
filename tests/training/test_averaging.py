"""Checkpoint averaging: the element-wise mean, loadable like a training directory."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from binaries import assert_user_error, run, run_in_process

from t2t_keras.errors import UserError
from t2t_keras.run.loading import load_trained, read_run_files
from t2t_keras.run.weights import build_model, make_checkpoint, model_variables, restore_model
from t2t_keras.training.averaging import (
    AveragedCheckpoint,
    average_checkpoints,
    select_checkpoints,
)

AVERAGED_STEPS = (100, 150, 200)


def copy_training(trained_dir: Path, target: Path) -> Path:
    """A writable copy of the shared training directory."""
    shutil.copytree(trained_dir, target)
    return target


def model_weights(prefix: Path) -> dict[str, np.ndarray]:
    """The model's weights in a checkpoint, read directly, by checkpoint key."""
    reader = tf.train.load_checkpoint(str(prefix))
    return {
        key: reader.get_tensor(key)
        for key, _ in tf.train.list_variables(str(prefix))
        if key.startswith("model/")
    }


@pytest.fixture(scope="module")
def training(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_training(trained_dir, tmp_path_factory.mktemp("averaging") / "train")


@pytest.fixture(scope="module")
def averaged(training: Path) -> AveragedCheckpoint:
    """ckpt-100, 150 and 200 averaged into training/averaged."""
    prefixes = [str(training / f"ckpt-{step}") for step in AVERAGED_STEPS]
    return average_checkpoints(str(training), checkpoints=prefixes)


def test_average_is_the_elementwise_mean(training: Path, averaged: AveragedCheckpoint) -> None:
    inputs = [model_weights(training / f"ckpt-{step}") for step in AVERAGED_STEPS]
    result = model_weights(Path(averaged.checkpoint))
    assert averaged.checkpoint == str(training / "averaged" / "ckpt-200")
    assert len(result) > 30 and all(set(weights) == set(result) for weights in inputs)
    # The inputs differ, so a copy of any one of them is no mean.
    for first, second in [(0, 1), (1, 2), (0, 2)]:
        assert max(np.abs(inputs[first][k] - inputs[second][k]).max() for k in result) > 1e-3
    for key, value in result.items():
        expected = np.mean([weights[key].astype(np.float64) for weights in inputs], axis=0)
        assert value.dtype == inputs[0][key].dtype
        np.testing.assert_allclose(value, expected, atol=1e-6, err_msg=key)
    all_keys = [key for key, _ in tf.train.list_variables(averaged.checkpoint)]
    assert not [key for key in all_keys if key.startswith("optimizer/")]


def test_average_loads_for_decoding(training: Path, averaged: AveragedCheckpoint) -> None:
    loaded = load_trained(averaged.directory, use_xla=False)
    assert loaded.checkpoint == averaged.checkpoint
    assert set(loaded.vocabs) == {"inputs", "targets"}
    # The means, computed through the ordinary restore path rather than checkpoint keys.
    run, hparams = read_run_files(str(training))
    reference = build_model(run["model"], hparams, use_xla=False)
    sums: dict[str, np.ndarray] = {}
    for step in AVERAGED_STEPS:
        restore_model(reference, str(training / f"ckpt-{step}"))
        for path, value in model_variables(reference).items():
            sums[path] = sums.get(path, 0.0) + np.asarray(value, np.float64)
    weights = model_variables(loaded.model)
    assert set(weights) == set(sums)
    for path, total in sums.items():
        np.testing.assert_allclose(np.asarray(weights[path]), total / 3, atol=1e-6, err_msg=path)
    record = json.loads((Path(averaged.directory) / "averaged.json").read_text())
    assert record["checkpoints"] == [str(training / f"ckpt-{step}") for step in AVERAGED_STEPS]


def test_num_last_checkpoints_picks_the_newest(training: Path, tmp_path: Path) -> None:
    assert select_checkpoints(str(training), 2) == [
        str(training / "ckpt-150"),
        str(training / "ckpt-200"),
    ]
    # Fewer than asked: those there are.
    assert len(select_checkpoints(str(training), 10)) == 4
    with pytest.raises(UserError, match="holds no checkpoints"):
        select_checkpoints(str(tmp_path), 5)


def test_an_earlier_average_is_replaced_whole(training: Path, tmp_path: Path) -> None:
    target = tmp_path / "averaged"
    average_checkpoints(str(training), 3, averaged_dir=str(target))
    (target / "stale.txt").write_text("left by hand")  # Would survive writing file by file.
    averaged = average_checkpoints(str(training), 2, averaged_dir=str(target))
    assert averaged.sources == (str(training / "ckpt-150"), str(training / "ckpt-200"))
    assert not (target / "stale.txt").exists()
    assert len(json.loads((target / "averaged.json").read_text())["checkpoints"]) == 2
    assert [path.name for path in tmp_path.iterdir()] == ["averaged"]


def test_other_directories_are_refused_untouched(training: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is or contains the training directory"):
        average_checkpoints(str(training), averaged_dir=str(training))
    with pytest.raises(UserError, match="is or contains the training directory"):
        average_checkpoints(str(training), averaged_dir=str(training.parent))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(UserError, match="not an earlier average"):
        average_checkpoints(str(training), averaged_dir=str(mine))
    assert [path.name for path in mine.iterdir()] == ["notes.txt"]


def test_checkpoints_of_other_shapes_are_refused(training: Path, tmp_path: Path) -> None:
    run, hparams = read_run_files(str(training))
    narrower = build_model(run["model"], hparams.override("d_ff=128"), use_xla=False)
    other = str(tmp_path / "other" / "ckpt-300")
    make_checkpoint(narrower).write(other)
    ours = str(training / "ckpt-200")
    target = str(tmp_path / "averaged")
    with pytest.raises(UserError) as refused:
        average_checkpoints(str(training), checkpoints=[ours, other], averaged_dir=target)
    message = str(refused.value)
    assert "\n" not in message
    found = re.search(
        r"variable (\S+) has shape (\[.*?\]) in (\S+) but shape (\[.*?\]) in (\S+) ", message
    )
    assert found, message
    name, shape, where, other_shape, other_where = found.groups()
    assert (where, other_where) == (ours, other)
    # The named variable's shapes, read independently from both checkpoints.
    key = "model/" + name.replace("/", ".S") + "/.ATTRIBUTES/VARIABLE_VALUE"
    shapes = [dict(tf.train.list_variables(prefix))[key] for prefix in (ours, other)]
    assert [shape, other_shape] == [str(shapes[0]), str(shapes[1])]
    assert shapes[0] != shapes[1]
    # One such checkpoint does not fit the model the training directory describes.
    with pytest.raises(UserError, match="the model .*run.json describes"):
        average_checkpoints(str(training), checkpoints=[other], averaged_dir=target)


def test_binary_end_to_end_and_bad_input(trained_dir: Path, tmp_path: Path) -> None:
    training = copy_training(trained_dir, tmp_path / "train")
    target = tmp_path / "averaged"
    success = run(
        "t2t-avg-checkpoints",
        f"--output_dir={training}",
        "--num_last_checkpoints=2",
        f"--averaged_dir={target}",
    )
    # The refusals in process: the real process's start-up is the one above.
    missing = run_in_process("t2t-avg-checkpoints", f"--output_dir={tmp_path / 'nowhere'}")
    same = run_in_process(
        "t2t-avg-checkpoints", f"--output_dir={training}", f"--averaged_dir={training}"
    )
    assert success.returncode == 0, success.stderr
    assert f"{training / 'ckpt-150'}\n" in success.stdout
    assert f"{training / 'ckpt-100'}\n" not in success.stdout
    assert f"Wrote {target / 'ckpt-200'}" in success.stdout
    assert f"t2t-decoder --output_dir={target} " in success.stdout
    assert tf.train.latest_checkpoint(str(target)) == str(target / "ckpt-200")
    assert_user_error(missing, "nowhere does not exist")
    assert_user_error(same, "is or contains the training directory")
