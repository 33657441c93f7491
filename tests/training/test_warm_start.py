"""Fine-tuning: t2t-datagen --vocab_from, then t2t-trainer --warm_start_from.

A fresh run given a parent starts from the parent's weights, with its own
optimizer and step; run.json records the parent; a fine-tuning run stopped
and rerun ends, under --deterministic, as one never stopped. What would give
the weights another meaning (another vocabulary, other shapes) is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from binaries import assert_user_error, run_in_process
from shared_fixtures import NUMBER_WORDS, TRAINED_STEPS

from t2t_keras.run.weights import checkpoint_model_shapes

VOCAB = f"vocab.{NUMBER_WORDS}.model"


def _fine_tune(data: Path, parent: Path, output_dir: Path, *extra: str) -> list[str]:
    return [
        f"--problem={NUMBER_WORDS}_rev",  # Another problem, the same vocabulary.
        "--hparams_set=transformer_tiny",
        f"--data_dir={data}",
        f"--output_dir={output_dir}",
        f"--warm_start_from={parent}",
        "--eval_steps=1",
        "--eval_every_steps=0",
        "--eval_bleu_examples=0",
        "--random_seed=2",
        "--deterministic",
        "--xla=off",
        "--mixed_precision=off",
        *extra,
    ]


@pytest.fixture(scope="module")
def reversed_data(trained_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reversed number-words problem's data, encoded with trained_dir's vocabulary."""
    root = tmp_path_factory.mktemp("reversed")
    result = run_in_process(
        "t2t-datagen",
        f"--problem={NUMBER_WORDS}_rev",
        f"--data_dir={root / 'data'}",
        f"--tmp_dir={root / 'tmp'}",
        f"--vocab_from={trained_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "training the" not in result.stderr  # The parent's vocabulary, none trained.
    assert (root / "data" / VOCAB).read_bytes() == (trained_dir / VOCAB).read_bytes()
    return root / "data"


def test_fine_tuning_starts_from_the_parents_weights_with_a_fresh_optimizer(
    trained_dir: Path, reversed_data: Path, tmp_path: Path
) -> None:
    output_dir = tmp_path / "tuned"
    result = run_in_process(
        "t2t-trainer", *_fine_tune(reversed_data, trained_dir, output_dir, "--train_steps=1")
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "optimizer, step and schedule start afresh" in result.stderr
    # Step 1 of a fresh schedule (warmup: a rate of 3e-5): the parent's weights, barely
    # moved (weights drawn afresh would differ by about 0.02).
    parent = tf.train.load_checkpoint(str(trained_dir / f"ckpt-{TRAINED_STEPS}"))
    tuned = tf.train.load_checkpoint(str(output_dir / "ckpt-1"))
    names = checkpoint_model_shapes(str(output_dir / "ckpt-1"))
    assert len(names) > 20
    for name in names:
        np.testing.assert_allclose(tuned.get_tensor(name), parent.get_tensor(name), atol=1e-4)
    record = json.loads((output_dir / "run.json").read_text())["warm_start_from"]
    assert record == {
        "checkpoint": str(trained_dir / f"ckpt-{TRAINED_STEPS}"),
        "problem": NUMBER_WORDS,
        "hparams_set": "transformer_tiny",
    }


def test_a_fine_tuning_that_goes_on_with_the_parents_optimizer_resumes_as_never_stopped(
    trained_dir: Path, reversed_data: Path, tmp_path: Path
) -> None:
    """With --warm_start_optimizer the steps count on from the parent's; stopped at its
    first step and rerun, it ends bit for bit as a run never stopped (under --deterministic,
    the rerun skips only the new data's batches it trained on). On one device: the
    fresh fine-tuning above takes the parent's weights into mirrored variables."""
    stopped, straight = tmp_path / "stopped", tmp_path / "straight"
    go_on = "--warm_start_optimizer", "--distribution_strategy=one_device"
    first = TRAINED_STEPS + 1
    args = _fine_tune(reversed_data, trained_dir, stopped, f"--train_steps={first}", *go_on)
    result = run_in_process("t2t-trainer", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "optimizer state and step, from which the schedule goes on" in result.stderr
    assert (stopped / f"ckpt-{first}.index").exists()
    record = json.loads((stopped / "run.json").read_text())["warm_start_from"]
    assert record["optimizer_step"] == TRAINED_STEPS
    last = TRAINED_STEPS + 3
    for output_dir in (stopped, straight):  # The same command: a rerun, then a fresh run.
        args = _fine_tune(reversed_data, trained_dir, output_dir, f"--train_steps={last}")
        result = run_in_process("t2t-trainer", *args, *go_on)
        assert result.returncode == 0, result.stderr[-3000:]
        assert ("resuming from them" in result.stderr) == (output_dir == stopped)
        # The rerun skips the one batch of the new data its first step trained on.
        assert ("Skipping the 1 batches per replica" in result.stderr) == (output_dir == stopped)
    assert json.loads((stopped / "run.json").read_text())["warm_start_from"] == record
    one, other = (tf.train.load_checkpoint(str(d / f"ckpt-{last}")) for d in (stopped, straight))
    parent = tf.train.load_checkpoint(str(trained_dir / f"ckpt-{TRAINED_STEPS}"))
    names = checkpoint_model_shapes(str(stopped / f"ckpt-{last}"))
    for name in names:
        np.testing.assert_array_equal(one.get_tensor(name), other.get_tensor(name), name)
    assert max(np.abs(one.get_tensor(n) - parent.get_tensor(n)).max() for n in names) > 0
    too_few = run_in_process(
        "t2t-trainer",
        *_fine_tune(reversed_data, trained_dir, tmp_path / "few", "--train_steps=100", *go_on),
    )
    assert_user_error(too_few, f"goes on from the parent's step {TRAINED_STEPS}")


def test_a_parent_that_does_not_fit_is_refused(
    trained_dir: Path,
    pre_norm_trained_dir: Path,
    number_words_data: Path,
    reversed_data: Path,
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    missing = run_in_process(
        "t2t-trainer", *_fine_tune(reversed_data, tmp_path / "nothing", out, "--train_steps=1")
    )
    assert_user_error(missing, f"--warm_start_from={tmp_path / 'nothing'} names no trained run")
    other_vocab = run_in_process(
        "t2t-trainer", *_fine_tune(reversed_data, pre_norm_trained_dir, out, "--train_steps=1")
    )
    assert_user_error(other_vocab, "is not the one", "t2t-datagen --vocab_from=")
    other_shape = run_in_process(
        "t2t-trainer",
        *_fine_tune(reversed_data, trained_dir, out, "--train_steps=1", "--hparams=d_ff=48"),
    )
    assert_user_error(other_shape, "other shapes", "d_ff=48 (parent")
    assert not out.exists() or not list(out.glob("ckpt-*"))  # Nothing was trained.
    # Data already encoded with another vocabulary is kept, and the parent's refused.
    taken = run_in_process(
        "t2t-datagen",
        f"--problem={NUMBER_WORDS}",
        f"--data_dir={number_words_data}",
        f"--vocab_from={pre_norm_trained_dir}",
    )
    assert_user_error(taken, "uses one vocabulary")
