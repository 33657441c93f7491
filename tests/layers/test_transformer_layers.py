"""Encoder and decoder layers, their residual and feed-forward blocks: the three modes,
weight paths, config round trips."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_keras.layers import DecoderLayer, EncoderLayer, FeedForward
from t2t_keras.layers.masks import beam_step_bias, causal_bias, padding_bias
from t2t_keras.layers.residual import Residual

ARGS = {"num_heads": 2, "key_depth": 3, "value_depth": 5, "d_ff": 16, "dropout": 0.0}
SOURCE = tf.constant([[5, 6, 7, 1, 0, 0], [4, 1, 0, 0, 0, 0]])


def test_build_creates_the_named_sublayers() -> None:
    layer = DecoderLayer(**ARGS, name="decoder_0")
    assert not hasattr(layer, "self_attention")  # __init__ only stores its arguments.
    layer.build((2, 4, 8), (2, 6, 8))
    blocks = ["self_attention_block", "memory_attention_block", "feed_forward_block"]
    assert sorted(w.path for w in layer.weights) == sorted(
        [f"decoder_0/feed_forward/{d}/{w}" for d in ("inner", "outer") for w in ("kernel", "bias")]
        + [f"decoder_0/{block}/layer_norm/{w}" for block in blocks for w in ("gamma", "beta")]
        + [
            f"decoder_0/{attention}/{w}"
            for attention in ("self_attention", "memory_attention")
            for w in ("query", "key", "value", "output")
        ]
    )


def test_encoder_call_and_call_with_weights_agree() -> None:
    layer = EncoderLayer(**ARGS)
    x, bias = tf.random.normal([2, 6, 8]), padding_bias(SOURCE)
    output = layer(x, bias)
    assert isinstance(output, tf.Tensor) and output.shape == (2, 6, 8)
    with_weights, weights = layer.call_with_weights(x, bias)
    np.testing.assert_array_equal(with_weights, output)
    assert weights.shape == (2, 2, 6, 6) and weights.dtype == tf.float32
    assert np.all(weights.numpy()[1, :, :, 2:] == 0.0)  # PAD keys of the second sentence.


def test_decoder_call_and_call_with_weights_agree() -> None:
    layer = DecoderLayer(**ARGS)
    x, memory = tf.random.normal([2, 4, 8]), tf.random.normal([2, 6, 8])
    memory_bias = padding_bias(SOURCE)
    output = layer(x, memory, causal_bias(4), memory_bias)
    assert isinstance(output, tf.Tensor) and output.shape == (2, 4, 8)
    with_weights, (self_weights, memory_weights) = layer.call_with_weights(
        x, memory, causal_bias(4), memory_bias
    )
    np.testing.assert_array_equal(with_weights, output)
    assert self_weights.shape == (2, 2, 4, 4) and memory_weights.shape == (2, 2, 4, 6)
    future = np.triu(np.ones([4, 4], bool), k=1)
    assert np.all(self_weights.numpy()[..., future] == 0.0)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_decode_steps_equal_the_full_decoder_position_by_position(norm_position: str) -> None:
    layer = DecoderLayer(**ARGS, norm_position=norm_position)
    x, memory = tf.random.normal([2, 4, 8]), tf.random.normal([2, 6, 8])
    memory_bias = padding_bias(SOURCE)
    full = layer(x, memory, causal_bias(4), memory_bias)
    prefilled = layer.project_memory(memory)
    cache = {"self": layer.empty_cache(2, 5), "memory": prefilled}
    for index in range(4):
        self_bias = beam_step_bias(tf.zeros([2, 1, 5], tf.int32), index)
        step, cache = layer.decode_step(
            x[:, index : index + 1], cache, self_bias, memory_bias, index
        )
        assert step.shape == (2, 1, 8) and cache["memory"] is prefilled
        assert cache["self"]["key"].shape == (2, 2, 1, 5, 3)
        np.testing.assert_allclose(step[:, 0], full[:, index], atol=1e-5)


@pytest.mark.parametrize("position", ["post", "pre"])
def test_residual_block_norms_after_or_before(position: str) -> None:
    block = Residual(position, dropout=0.5, epsilon=1e-6)
    x, output = tf.random.normal([2, 3, 8]), tf.random.normal([2, 3, 8])
    block.build(x.shape)
    if position == "post":
        np.testing.assert_array_equal(block.sublayer_input(x), x)
        np.testing.assert_allclose(block(x, output), block.norm(x + output), atol=1e-6)
    else:
        np.testing.assert_allclose(block.sublayer_input(x), block.norm(x), atol=1e-6)
        np.testing.assert_allclose(block(x, output), x + output, atol=1e-6)
    assert not np.allclose(block(x, output, training=True), block(x, output))


@pytest.mark.parametrize(
    "layer",
    [
        EncoderLayer(**ARGS, norm_position="pre", relu_dropout=0.25, use_xla=False),
        DecoderLayer(**ARGS, attention_dropout=0.5, norm_epsilon=1e-5),
        Residual("pre", dropout=0.25, epsilon=1e-5),
        FeedForward(12, relu_dropout=0.5),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_config_round_trip(layer: keras.layers.Layer) -> None:
    copy = type(layer).from_config(layer.get_config())
    assert copy.get_config() == layer.get_config()
