"""Decoding speed: time per output token as outputs grow, cached vs uncached.

    .venv/bin/python benchmarks/decode_speed.py [--hparams_set=transformer_small]

Builds an untrained model (vocab 8000) whose EOS logit is pinned to zero so
that every sentence runs to its length limit, then decodes a batch whose
outputs are 10 or 100 tokens long. Prints the median of several runs, XLA on.
The uncached baseline re-runs the decoder over all L positions every step,
which is what decoding without the key/value cache costs at fixed shapes.
"""

from __future__ import annotations

import statistics
import time

import keras
import tensorflow as tf
from absl import app, flags

from t2t_keras import registry
from t2t_keras.data.ids import EOS_ID
from t2t_keras.decoding import Decoder, decode_limits, greedy_search

flags.DEFINE_string("hparams_set", "transformer_small", "Model to time.")
flags.DEFINE_integer("batch_size", 8, "Sentences per batch.")
flags.DEFINE_integer("runs", 5, "Timed runs per setting (after one warm-up).")
FLAGS = flags.FLAGS

INPUT_TOKENS = 10


def build_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    hparams = registry.hparams(FLAGS.hparams_set).override("vocab_size=8000")
    model = registry.model("transformer")(hparams)
    model.build()
    table = model.softmax_weights.embeddings
    table.assign(tf.tensor_scatter_nd_update(table, [[EOS_ID]], tf.zeros([1, hparams.d_model])))
    return model


def inputs() -> tf.Tensor:
    body = tf.random.stateless_uniform(
        [FLAGS.batch_size, INPUT_TOKENS - 1], seed=[1, 2], minval=3, maxval=8000, dtype=tf.int32
    )
    return tf.concat([body, tf.fill([FLAGS.batch_size, 1], EOS_ID)], axis=1)


def uncached_greedy(model: keras.Model, extra_length: int) -> tf.types.experimental.Function:
    """Greedy decoding that recomputes the decoder over all positions per step."""

    @tf.function(jit_compile=True)
    def decode(batch: tf.Tensor) -> tf.Tensor:
        decode_length, max_lengths = decode_limits(batch, extra_length, model.hparams.max_length)
        memory, bias = model.encode(batch)
        width = tf.shape(batch)[0]

        def step(state, index, previous):
            targets = state + tf.one_hot(index - 1, decode_length, dtype=tf.int32) * previous[
                :, tf.newaxis
            ] * tf.cast(index > 0, tf.int32)
            logits = model.decode(targets, memory, bias)
            return tf.gather(logits, index, axis=1), targets

        state = tf.zeros([width, decode_length], tf.int32)
        return greedy_search(step, state, decode_length, max_lengths, 0.6)[0]

    return decode


def median_seconds(function, batch: tf.Tensor) -> float:
    function(batch)  # Compile.
    times = []
    for _ in range(FLAGS.runs):
        start = time.perf_counter()
        result = function(batch)
        tf.nest.map_structure(lambda t: t.numpy(), result)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str]) -> None:
    del argv
    model, batch = build_model(), inputs()
    print(f"{FLAGS.hparams_set}, vocab 8000, batch {FLAGS.batch_size}, CPU, XLA on")
    print(f"{'search':<18}{'tokens':>7}{'seconds':>10}{'ms/token':>10}")
    per_token = {}
    for name in ("greedy", "beam 4", "greedy uncached"):
        for output_tokens in (10, 100):
            extra = output_tokens - INPUT_TOKENS
            if name == "greedy uncached":
                function = uncached_greedy(model, extra)
            else:
                function = Decoder(
                    model, beam_size=1 if name == "greedy" else 4, extra_length=extra
                )
            seconds = median_seconds(function, batch)
            per_token[name, output_tokens] = 1000 * seconds / output_tokens
            print(
                f"{name:<18}{output_tokens:>7}{seconds:>10.3f}{per_token[name, output_tokens]:>10.2f}"
            )
    for name in ("greedy", "beam 4", "greedy uncached"):
        ratio = per_token[name, 100] / per_token[name, 10]
        print(f"{name}: per-token time at 100 tokens / at 10 tokens = {ratio:.2f}")


if __name__ == "__main__":
    app.run(main)
