"""Decoding throughput: sentences per second, cached vs uncached, XLA on vs off.

    nice -n 5 .venv/bin/python benchmarks/decode_speed.py
    # A quick run:
    .venv/bin/python benchmarks/decode_speed.py --hparams_set=transformer_tiny \\
        --batch_size=4 --input_tokens=8 --runs=1 --settings=cached_xla,cached_no_xla

Builds an untrained model (vocabulary 37,000, as the paper's En-De BPE) and
decodes one batch of random-id inputs of --input_tokens subword tokens each
(27, the mean WMT newstest sentence, plus EOS) with beam search, alpha 0.6.
The EOS row of the (shared) embedding is zeroed, so EOS always has logit 0,
far below the best of 37,000 random logits: every hypothesis runs to exactly
--output_tokens tokens before its EOS, checked on every result.

Settings (--settings, any of the four):
  cached_*: `Decoder`, the decoder's key/value cache, one position per step.
  uncached_*: each step re-runs the teacher-forced `model.decode` over the
    whole fixed-length prefix [B * K, L] and reads the logits at the current
    position; the prefix is the search state, reordered with the beams.
  *_xla: the whole search XLA-compiled and the model built with use_xla.
  *_no_xla: a plain graph-mode tf.function, model built without use_xla.
Both models hold the same weights. Before timing, cached and uncached beam
search must agree (same ids, close scores) on a short ragged batch.

Each setting is called once (trace and compile; its time is printed as
"first s") and then --runs times; sentences/s is batch size / median seconds
per batch, and tokens/s counts every decoded position, EOS included, of the
returned hypotheses. Ratios between settings measured in one run are more
trustworthy than absolute numbers on a shared CPU.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from t2t_keras import catalog, registry
from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.search import Decoder, beam_search, decode_limits, greedy_search
from t2t_keras.search.settings import DecodeHParams

SETTINGS = ("cached_xla", "cached_no_xla", "uncached_xla", "uncached_no_xla")
VOCAB_SIZE = 37000
ALPHA = 0.6

flags.DEFINE_string("hparams_set", "transformer_base", "Model shapes to time (untrained).")
flags.DEFINE_integer("batch_size", 32, "Sentences per batch.", lower_bound=1)
flags.DEFINE_integer("beam_size", 4, "Beam size (1: greedy search).", lower_bound=1)
flags.DEFINE_integer("input_tokens", 27, "Subword tokens per input, EOS excluded.", lower_bound=1)
flags.DEFINE_integer(
    "output_tokens",
    None,
    "Tokens per output, EOS excluded: at least --input_tokens + 1, the input's length with "
    "its EOS (the default).",
    lower_bound=1,
)
flags.DEFINE_integer("runs", 3, "Timed runs per setting, after one compiling call.", lower_bound=1)
flags.DEFINE_list("settings", list(SETTINGS), f"Which to run, any of: {', '.join(SETTINGS)}.")
flags.register_validator(
    "settings",
    lambda names: bool(names) and all(name in SETTINGS for name in names),
    f"--settings takes a comma-separated list of: {', '.join(SETTINGS)}.",
)
FLAGS = flags.FLAGS

SearchFunction = Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]]


def build_models(hparams_set: str) -> dict[bool, keras.Model]:
    """Two untrained Transformers with equal weights, keyed by use_xla.

    The EOS embedding row is zeroed so that EOS is never the best token.
    """
    keras.utils.set_random_seed(0)
    hparams = registry.hparams(hparams_set).override(f"vocab_size={VOCAB_SIZE}")
    models = {}
    for use_xla in (True, False):
        models[use_xla] = registry.model("transformer")(hparams, use_xla=use_xla)
        models[use_xla].build()
    table = models[True].softmax_weights.embeddings
    table.assign(tf.tensor_scatter_nd_update(table, [[EOS_ID]], tf.zeros([1, hparams.d_model])))
    models[False].set_weights(models[True].get_weights())
    return models


def random_inputs(lengths: list[int], seed: int) -> tf.Tensor:
    """[B, max(lengths) + 1] random ids: row b has lengths[b] tokens, EOS, then PAD."""
    width = max(lengths) + 1
    body = tf.random.stateless_uniform(
        [len(lengths), width], seed=[seed, 0], minval=EOS_ID + 2, maxval=VOCAB_SIZE, dtype=tf.int32
    )
    positions = tf.range(width)[tf.newaxis]
    lengths = tf.constant(lengths)[:, tf.newaxis]
    return tf.where(positions < lengths, body, tf.where(positions == lengths, EOS_ID, PAD_ID))


def uncached_search(
    model: keras.Model, beam_size: int, extra_length: int, jit_compile: bool
) -> SearchFunction:
    """Beam (or greedy) search whose step re-runs the decoder over the whole prefix.

    Args:
      model: a built Transformer.
      beam_size: K.
      extra_length: as in `Decoder`.
      jit_compile: XLA-compile the search.

    Returns:
      A function inputs [B, S] -> (ids [B, 1, L], scores [B, 1]), as `Decoder`.
    """

    def search(inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        decode_length, max_lengths = decode_limits(inputs, extra_length, model.hparams.max_length)
        memory, memory_bias = model.encode(inputs)
        memory = tf.repeat(memory, beam_size, axis=0)
        memory_bias = tf.repeat(memory_bias, beam_size, axis=0)

        def step(prefix, index, previous, parents):
            # prefix [B * K, L] holds the tokens before index - 1, PAD after;
            # previous (PAD at index 0) goes in at index - 1.
            if parents is not None:
                prefix = tf.gather(prefix, parents)
            prefix += tf.one_hot(index - 1, decode_length, dtype=tf.int32) * previous[:, None]
            logits = model.decode(prefix, memory, memory_bias)  # [B * K, L, V]
            return tf.gather(logits, index, axis=1), prefix

        prefix = tf.zeros([inputs.shape[0] * beam_size, decode_length], tf.int32)
        if beam_size == 1:
            return greedy_search(step, prefix, decode_length, max_lengths, ALPHA)
        return beam_search(step, prefix, beam_size, decode_length, max_lengths, ALPHA, 1)

    return tf.function(search, jit_compile=jit_compile)


def make_search(
    setting: str, models: dict[bool, keras.Model], beam_size: int, extra_length: int
) -> SearchFunction:
    """The search of one of SETTINGS."""
    xla = not setting.endswith("_no_xla")
    if setting.startswith("cached"):
        settings = DecodeHParams(beam_size=beam_size, alpha=ALPHA, extra_length=extra_length)
        return Decoder(models[xla], settings.resolve(models[xla].hparams).search, jit_compile=xla)
    return uncached_search(models[xla], beam_size, extra_length, jit_compile=xla)


def check_cached_equals_uncached(models: dict[bool, keras.Model], beam_size: int) -> None:
    """Asserts both searches find the same hypotheses on a short ragged batch."""
    inputs = random_inputs([5, 2, 4], seed=7)
    found = [
        make_search(setting, models, beam_size, extra_length=2)(inputs)
        for setting in ("cached_no_xla", "uncached_no_xla")
    ]
    (cached_ids, cached_scores), (uncached_ids, uncached_scores) = found
    np.testing.assert_array_equal(cached_ids.numpy(), uncached_ids.numpy())
    np.testing.assert_allclose(cached_scores.numpy(), uncached_scores.numpy(), rtol=1e-4)
    lengths = np.sum(cached_ids.numpy()[:, 0] != PAD_ID, axis=1)
    # Input length (its EOS counted) + extra_length tokens, then EOS.
    np.testing.assert_array_equal(lengths, [9, 6, 8])


def time_search(
    search: SearchFunction, inputs: tf.Tensor, runs: int
) -> tuple[float, float, np.ndarray]:
    """(seconds of the first call, median seconds of the next runs, ids [B, 1, L])."""
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        ids, _ = search(inputs)
        ids = ids.numpy()
        times.append(time.perf_counter() - start)
    return times[0], statistics.median(times[1:]), ids


def check_lengths(ids: np.ndarray, output_tokens: int) -> None:
    """Asserts every hypothesis is output_tokens tokens then EOS."""
    lengths = np.sum(ids[:, 0] != PAD_ID, axis=1)
    assert np.all(lengths == output_tokens + 1), f"output lengths {sorted(set(lengths))}"
    assert np.all(ids[:, 0, output_tokens] == EOS_ID)


def print_ratios(seconds: dict[str, float]) -> None:
    """Speed-ups between settings measured in this run."""
    pairs = [
        ("cached / uncached, XLA on", "cached_xla", "uncached_xla"),
        ("cached / uncached, XLA off", "cached_no_xla", "uncached_no_xla"),
        ("XLA on / off, cached", "cached_xla", "cached_no_xla"),
        ("XLA on / off, uncached", "uncached_xla", "uncached_no_xla"),
    ]
    for label, fast, slow in pairs:
        if fast in seconds and slow in seconds:
            print(f"speed-up {label}: {seconds[slow] / seconds[fast]:.2f}x")


def main(argv: list[str]) -> None:
    catalog.load()
    del argv
    batch_size, beam_size = FLAGS.batch_size, FLAGS.beam_size
    # The input's length counts its EOS; outputs may add extra_length >= 0 tokens to it.
    output_tokens = FLAGS.output_tokens or FLAGS.input_tokens + 1
    extra_length = output_tokens - (FLAGS.input_tokens + 1)
    if extra_length < 0:
        raise app.UsageError(
            f"--output_tokens={output_tokens} is below --input_tokens + 1 = "
            f"{FLAGS.input_tokens + 1}: outputs are at most the input's length (with its EOS) "
            "plus extra_length tokens, so a fixed output length must be at least that."
        )
    models = build_models(FLAGS.hparams_set)
    if output_tokens + 1 > models[True].hparams.max_length:
        raise app.UsageError(
            f"--output_tokens must be at most max_length - 1 of {FLAGS.hparams_set}"
        )
    check_cached_equals_uncached(models, beam_size)
    inputs = random_inputs([FLAGS.input_tokens] * batch_size, seed=1)
    steps = output_tokens + 1
    print(
        f"{FLAGS.hparams_set}, vocab {VOCAB_SIZE}, batch {batch_size}, beam {beam_size}, "
        f"alpha {ALPHA}; inputs {FLAGS.input_tokens} tokens + EOS, outputs "
        f"{output_tokens} tokens + EOS ({steps} decoding steps); {os.cpu_count()} CPUs, "
        f"median of {FLAGS.runs} runs; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'setting':<17}{'first s':>9}{'median s':>10}{'sentences/s':>13}{'tokens/s':>10}")
    seconds, reference = {}, None
    for setting in FLAGS.settings:
        search = make_search(setting, models, beam_size, extra_length)
        first, seconds[setting], ids = time_search(search, inputs, FLAGS.runs)
        check_lengths(ids, output_tokens)
        same = "" if reference is None else f"  same ids: {np.array_equal(ids, reference)}"
        reference = ids if reference is None else reference
        print(
            f"{setting:<17}{first:>9.2f}{seconds[setting]:>10.2f}"
            f"{batch_size / seconds[setting]:>13.2f}"
            f"{batch_size * steps / seconds[setting]:>10.1f}{same}",
            flush=True,
        )
    print_ratios(seconds)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    app.run(main)
