"""Decoding does not re-run the prefix: time per token stays flat (slow; run with -m slow)."""

from __future__ import annotations

import time

import keras
import pytest
import tensorflow as tf
from decoders import make_decoder

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID
from t2t_keras.search import Decoder


def per_token_seconds(decoder: Decoder, inputs: tf.Tensor, tokens: int) -> float:
    decoder(inputs)  # Compile.
    times = []
    for _ in range(5):
        start = time.perf_counter()
        decoder(inputs)[0].numpy()
        times.append(time.perf_counter() - start)
    return sorted(times)[2] / tokens


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_time_per_token_is_flat_from_10_to_100_tokens(beam_size: int) -> None:
    keras.utils.set_random_seed(0)
    model = registry.model("transformer")(
        registry.hparams("transformer_small").override("vocab_size=8000")
    )
    model.build()
    table = model.softmax_weights.embeddings  # EOS logit 0: outputs run to their limit.
    table.assign(tf.tensor_scatter_nd_update(table, [[EOS_ID]], tf.zeros([1, 256])))
    inputs = tf.concat([tf.fill([8, 9], 7), tf.fill([8, 1], EOS_ID)], axis=1)
    short = per_token_seconds(make_decoder(model, beam_size, extra_length=0), inputs, 10)
    long = per_token_seconds(make_decoder(model, beam_size, extra_length=90), inputs, 100)
    assert long < 1.5 * short, f"{1000 * short:.2f} ms/token at 10, {1000 * long:.2f} at 100"
