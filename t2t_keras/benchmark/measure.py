"""Speed of training steps, decoding and matrix products, on random weights and ids.

Each function returns one measurement as a dict (t2t-benchmark prints it as a
JSON line). Times are medians over the timed repetitions, after untimed
warm-up runs that trace and compile; every timed run ends with its result on
the host, so no work is left queued.

Keys: `mode`, the shapes, `steps` (timed repetitions), `step_time_s`,
`tgt_tokens_per_s` (target tokens trained on, or generated per best
hypothesis), `tokens_per_s` (source + target tokens), `sentences_per_s`,
`flops_per_s` (see `t2t_keras.benchmark.flops`), `utilization` (of the
matrix-product rate measured in the same process at the same precision),
`peak_rss_mb`, `xla`, `precision`. Training also reports `rss_mb_by_step`:
the resident memory after every 10th step (warm-up steps counted), which
stays flat when nothing accumulates from step to step.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from t2t_keras.benchmark import flops
from t2t_keras.data.ids import EOS_ID
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.modes import Xla
from t2t_keras.run.weights import build_model
from t2t_keras.search.decoder import Decoder
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.hardware import matmul_product
from t2t_keras.training.trainer import POLICIES, build_train_step

# --mixed_precision -> the dtype of the matrix products it runs.
_MATMUL_DTYPES = {"off": tf.float32, "fp16": tf.float16, "bf16": tf.bfloat16}
_FIRST_WORD_ID = 3  # Ids 0, 1, 2 are PAD, EOS and UNK.


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def rss_mb() -> float:
    """The process's resident memory now, in MiB (the peak where /proc is missing)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return peak_rss_mb()
    return pages * resource.getpagesize() / (1024 * 1024)


def time_runs(
    run: Callable[[], Any], warmup: int, steps: int, rss: dict[str, float] | None = None
) -> float:
    """Median seconds of `steps` calls of `run` after `warmup` untimed ones.

    rss: if given, receives the resident MiB after every 10th call, by call number.
    """
    times = []
    for call in range(1, warmup + steps + 1):
        start = time.perf_counter()
        run()
        if call > warmup:
            times.append(time.perf_counter() - start)
        if rss is not None and call % 10 == 0:
            rss[str(call)] = round(rss_mb(), 1)
    return statistics.median(times)


def matmul(precision: str = "off", size: int = 2048, steps: int = 5, warmup: int = 2) -> dict:
    """The rate of [size, size] x [size, size] products through TensorFlow, in FLOP/s."""
    product = matmul_product(_MATMUL_DTYPES[precision], size)
    seconds = time_runs(product, warmup, steps)
    rate = 2.0 * size**3 / seconds
    return {
        "mode": "matmul",
        "matmul_size": size,
        "steps": steps,
        "step_time_s": seconds,
        "flops_per_s": rate,
        "utilization": 1.0,
        "peak_rss_mb": peak_rss_mb(),
        "xla": "off",
        "precision": _precision_name(precision),
    }


def random_ids(batch: int, length: int, vocab_size: int, seed: int) -> tf.Tensor:
    """[batch, length] int32 word ids ending with EOS, no padding."""
    words = tf.random.stateless_uniform(
        [batch, length - 1],
        seed=[seed, 0],
        minval=_FIRST_WORD_ID,
        maxval=vocab_size,
        dtype=tf.int32,
    )
    return tf.concat([words, tf.fill([batch, 1], EOS_ID)], axis=1)


def train(
    hparams: TransformerHParams,
    strategy: tf.distribute.Strategy,
    config: TrainConfig,
    batch_sentences: int,
    source_length: int,
    target_length: int,
    steps: int,
    warmup_steps: int,
    matmul_rate: float,
) -> dict:
    """Training steps on one fixed random batch of batch_sentences pairs (split over replicas).

    Args:
      hparams: the model's; vocab_size must be set.
      strategy: as t2t-trainer makes it.
      config: its xla and mixed_precision are used.
      batch_sentences, source_length, target_length: the global batch's shape.
      steps, warmup_steps: timed and untimed steps.
      matmul_rate: the FLOP/s of `matmul` at the precision used, for `utilization`.
    """
    replicas = strategy.num_replicas_in_sync
    per_replica = max(1, batch_sentences // replicas)
    batch = {
        "inputs": random_ids(per_replica, source_length, hparams.vocab_size, seed=1),
        "targets": random_ids(per_replica, target_length, hparams.targets_vocab_size(), seed=2),
    }
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    iterator = iter(strategy.distribute_datasets_from_function(lambda _: dataset))
    step = build_train_step("transformer", hparams, strategy, config)
    rss: dict[str, float] = {}
    seconds = time_runs(lambda: float(step(iterator)["loss"]), warmup_steps, steps, rss)
    sentences = per_replica * replicas
    work = flops.train_flops(hparams, sentences, source_length, target_length)
    return {
        "mode": "train",
        "batch_sentences": sentences,
        "src_length": source_length,
        "tgt_length": target_length,
        **_rates(seconds, steps, sentences, target_length, source_length + target_length),
        **_use(work, seconds, matmul_rate),
        "rss_mb_by_step": rss,
        "replicas": replicas,
        "xla": config.xla,
        "precision": _precision_name(config.mixed_precision),
    }


def decode(
    hparams: TransformerHParams,
    xla: str,
    precision: str,
    beam_size: int,
    decode_batch: int,
    source_length: int,
    output_length: int,
    steps: int,
    warmup_steps: int,
    matmul_rate: float,
) -> dict:
    """Decoding a fixed random batch to exactly output_length tokens per hypothesis.

    EOS is barred until output_length tokens (min_length), and the search may
    not go further (extra_length), so runs with other weights compare.
    """
    decoder = fixed_length_decoder(hparams, xla, precision, beam_size, source_length, output_length)
    inputs = random_ids(decode_batch, source_length, hparams.vocab_size, seed=3)
    seconds = time_runs(lambda: decoder(inputs)[0].numpy(), warmup_steps, steps)
    work = flops.decode_flops(hparams, decode_batch, source_length, output_length, beam_size)
    return {
        "mode": "decode",
        "beam_size": beam_size,
        "decode_batch": decode_batch,
        "src_length": source_length,
        "fixed_output_length": output_length,
        **_rates(seconds, steps, decode_batch, output_length, source_length + output_length),
        **_use(work, seconds, matmul_rate),
        "xla": xla,
        "precision": _precision_name(precision),
    }


def fixed_length_decoder(
    hparams: TransformerHParams,
    xla: str,
    precision: str,
    beam_size: int,
    source_length: int,
    output_length: int,
) -> Decoder:
    """The search of `decode`: a model of random weights, every hypothesis output_length
    tokens long for inputs of source_length."""
    if output_length < source_length:
        raise ValueError(
            f"--fixed_output_length={output_length} is below --src_length={source_length}: "
            "outputs may be at most input length + extra_length tokens, and extra_length "
            "cannot be negative; give a fixed output length of at least the source length."
        )
    compiled = Xla(xla)
    # bf16: a float32 model whose search runs its products in bfloat16 (Decoder's
    # precision); fp16: a mixed_float16 model, searched as --xla says.
    products = precision == "bf16"
    model = build_model(
        "transformer",
        hparams,
        use_xla=compiled.compiles_attention or products,
        dtype=POLICIES["off" if products else precision],
    )
    settings = DecodeHParams(
        beam_size=beam_size, extra_length=output_length - source_length, min_length=output_length
    ).resolve(hparams)
    return Decoder(
        model,
        settings.search,
        jit_compile=compiled.compiles_whole_search,
        precision="bfloat16" if products else "float32",
    )


def _rates(
    seconds: float, steps: int, sentences: int, target_length: int, both_lengths: int
) -> dict[str, float]:
    return {
        "steps": steps,
        "step_time_s": seconds,
        "tgt_tokens_per_s": sentences * target_length / seconds,
        "tokens_per_s": sentences * both_lengths / seconds,
        "sentences_per_s": sentences / seconds,
    }


def _use(work: float, seconds: float, matmul_rate: float) -> dict[str, float]:
    return {
        "flops_per_s": work / seconds,
        "utilization": work / seconds / matmul_rate,
        "matmul_flops_per_s": matmul_rate,
        "peak_rss_mb": peak_rss_mb(),
    }


def _precision_name(mixed_precision: str) -> str:
    return {"off": "fp32", "fp16": "fp16", "bf16": "bf16"}[mixed_precision]
