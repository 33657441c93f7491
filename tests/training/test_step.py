"""One update on 1 replica, on 2 replicas, and with accumulation gives the same weights."""

from __future__ import annotations

import functools
from dataclasses import replace

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.models.transformer import Transformer
from t2t_keras.training import TrainStep, make_strategy, optimizer_from_hparams

# Eight sentences of different lengths, ending with EOS (1) then PAD (0).
_RNG = np.random.default_rng(3)


def _sentences(count: int, vocab: int) -> list[list[int]]:
    return [[*_RNG.integers(3, vocab, size=int(n)).tolist(), 1] for n in _RNG.integers(2, 9, count)]


def _pad(rows: list[list[int]]) -> np.ndarray:
    width = max(len(row) for row in rows)
    return np.array([row + [0] * (width - len(row)) for row in rows], np.int32)


HPARAMS = replace(
    transformer_tiny(),
    vocab_size=20,
    dropout=0.0,
    embedding_dropout=0.0,
    learning_rate_schedule="constant",
    learning_rate=1.0,
    # Adam's first update is sign(g) * lr whatever the gradient's scale; a large
    # epsilon makes it about lr * g, so a wrongly scaled gradient shows.
    adam_epsilon=1.0,
)
INPUTS, TARGETS = _sentences(8, 20), _sentences(8, 20)


def _initial_weights() -> list[np.ndarray]:
    tf.keras.utils.set_random_seed(1)
    model = Transformer(HPARAMS, use_xla=False)
    model.build()
    return model.get_weights()


def _train_once(
    strategy: tf.distribute.Strategy,
    parts: int,
    hparams=HPARAMS,
    jit_compile: bool = False,
    dtype: str = "float32",
) -> list[np.ndarray]:
    """One step from the same initial weights; the 8 sentences split into `parts` batches.

    Part i goes to replica i % replicas, micro-batch i // replicas.
    """
    replicas = strategy.num_replicas_in_sync
    hparams = replace(hparams, gradient_accumulation_steps=parts // replicas)
    tf.keras.utils.set_random_seed(1)
    with strategy.scope():
        model = Transformer(hparams, use_xla=False, dtype=dtype)
        model.build()
        optimizer = optimizer_from_hparams(hparams)
        if dtype == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    size = len(INPUTS) // parts
    batches = [
        {
            "inputs": _pad(INPUTS[i * size : (i + 1) * size]),
            "targets": _pad(TARGETS[i * size : (i + 1) * size]),
        }
        for i in range(parts)
    ]

    def dataset(context: tf.distribute.InputContext) -> tf.data.Dataset:
        # One input pipeline on one machine; its batches go to the replicas in turn.
        assert context.num_input_pipelines == 1
        mine = [tf.data.Dataset.from_tensors(batch) for batch in batches]
        return functools.reduce(tf.data.Dataset.concatenate, mine)

    step = TrainStep(model, optimizer, hparams, strategy, jit_compile=jit_compile)
    metrics = step(iter(strategy.distribute_datasets_from_function(dataset)))
    assert float(metrics["target_tokens"]) == sum(len(t) for t in TARGETS)
    assert np.isfinite(float(metrics["loss"])) and float(metrics["grad_norm"]) > 0
    if dtype == "mixed_float16":  # A finite step is applied, not skipped.
        assert int(optimizer.iterations.numpy()) == 1
    return [np.array(w) for w in model.get_weights()]


@pytest.fixture(scope="module")
def one_replica() -> list[np.ndarray]:
    return _train_once(tf.distribute.OneDeviceStrategy("/cpu:0"), parts=1)


def test_two_replicas_match_one(one_replica: list[np.ndarray]) -> None:
    mirrored = make_strategy("mirrored")  # Over the 2 CPU devices of tests/conftest.py.
    assert mirrored.num_replicas_in_sync == 2
    for ours, reference in zip(_train_once(mirrored, parts=2), one_replica, strict=True):
        np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_accumulation_matches_one_batch(one_replica: list[np.ndarray]) -> None:
    weights = _train_once(tf.distribute.OneDeviceStrategy("/cpu:0"), parts=2)
    for ours, reference in zip(weights, one_replica, strict=True):
        np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_the_step_changes_the_weights(one_replica: list[np.ndarray]) -> None:
    changes = [np.abs(a - b).max() for a, b in zip(_initial_weights(), one_replica, strict=True)]
    assert sum(change > 1e-3 for change in changes) > len(changes) // 2


def test_whole_step_compiled_with_xla_matches(one_replica: list[np.ndarray]) -> None:
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    weights = _train_once(strategy, parts=1, jit_compile=True)
    for ours, reference in zip(weights, one_replica, strict=True):
        np.testing.assert_allclose(ours, reference, atol=1e-5)


SMALL_STEPS = replace(HPARAMS, learning_rate=0.01)


@pytest.fixture(scope="module")
def one_small_float32_step() -> list[np.ndarray]:
    return _train_once(tf.distribute.OneDeviceStrategy("/cpu:0"), parts=1, hparams=SMALL_STEPS)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_steps_train(policy: str, one_small_float32_step: list[np.ndarray]) -> None:
    """Half-precision steps run, with float16's loss scale, and move the weights as float32 does."""
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    reference = one_small_float32_step
    weights = _train_once(strategy, parts=1, hparams=SMALL_STEPS, dtype=policy)
    initial = _initial_weights()
    for ours, full, start in zip(weights, reference, initial, strict=True):
        assert ours.dtype == np.float32  # Variables stay float32.
        # Same direction as the float32 update, within half precision.
        np.testing.assert_allclose(ours - start, full - start, atol=2e-3)


def test_one_trace_serves_every_bucket_shape() -> None:
    strategy = make_strategy("one_device")
    with strategy.scope():
        model = Transformer(HPARAMS, use_xla=False)
        model.build()
        step = TrainStep(model, optimizer_from_hparams(HPARAMS), HPARAMS, strategy)
    shapes = [(4, 3, 5), (2, 7, 9), (4, 3, 5), (3, 12, 4)]  # (rows, source, target length)
    batches = [
        {
            "inputs": _pad(_sentences(rows, 20))[:, :source],
            "targets": _pad(_sentences(rows, 20))[:, :target],
        }
        for rows, source, target in shapes
    ]

    def generate():
        yield from batches

    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in ("inputs", "targets")}
    dataset = tf.data.Dataset.from_generator(generate, output_signature=spec)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    for _ in shapes:
        assert np.isfinite(float(step(iterator)["loss"]))
    assert step.tracing_count() == 1
