r"""t2t-benchmark: times training steps, decoding or matrix products; one JSON line each.

    t2t-benchmark --mode=train --hparams_set=transformer_base --hparams=vocab_size=8000 \
        --batch_sentences=64 --src_length=30 --tgt_length=30 --steps=5 --warmup_steps=2
    t2t-benchmark --mode=decode --beam_size=4 --decode_batch=32 --src_length=30 \
        --fixed_output_length=30
    t2t-benchmark --mode=matmul

Random weights and ids: no data or training directory is needed. Training and
decoding also time a matrix product at the precision they use, the reference
of `utilization`; --mode=matmul prints that rate for fp32 and bf16 (fp32 alone
where ONEDNN_MAX_CPU_ISA keeps oneDNN below bfloat16). Every line
names the machine: the CPU, its AVX2 / AVX-512 / AVX512_BF16 / AMX flags,
whether TensorFlow's oneDNN kernels were on, and the float32 matmul rate.
Decoding with --mixed_precision=bf16 runs the search's dense products in
bfloat16 through TensorFlow's kernels (oneDNN) and compiles the rest in
segments around them, whatever --xla (`t2t_keras.models.product_step`);
with auto, the default, decoding is timed in float32, then in bfloat16 too
where the CPU runs bfloat16 natively and faster: a line each.
"""

from __future__ import annotations

import json
import os
from typing import Any

from absl import flags

from t2t_keras import machine, modes
from t2t_keras.benchmark import with_vocabulary
from t2t_keras.bin import flag_groups, program
from t2t_keras.errors import UserError
from t2t_keras.models.transformer_hparams import TransformerHParams

MODES = ("train", "decode", "matmul")

flag_groups.define_registry_flags()
flag_groups.define_model_flags()
FLAGS = flags.FLAGS
FLAGS.set_default("hparams_set", "transformer_base")
flags.DEFINE_enum("mode", "train", MODES, "What to time: training steps, decoding or matmuls.")
flags.DEFINE_integer("batch_sentences", 64, "Training: sentence pairs per step.", lower_bound=1)
flags.DEFINE_integer("src_length", 30, "Tokens per source sentence, EOS included.", lower_bound=2)
flags.DEFINE_integer("tgt_length", 30, "Training: tokens per target, EOS included.", lower_bound=2)
flags.DEFINE_integer("steps", 5, "Timed repetitions; the median is reported.", lower_bound=1)
flags.DEFINE_integer("warmup_steps", 2, "Untimed repetitions first (tracing, compiling).")
flags.DEFINE_enum(
    "distribution_strategy", "one_device", modes.STRATEGIES, "Training: as t2t-trainer takes it."
)
flags.DEFINE_integer("num_gpus", 0, "Training: local GPUs to use; 0 = all.")
flags.DEFINE_integer("cpu_devices", 0, "Split the CPU into this many logical devices; 0 = not.")
flag_groups.define_xla_flag(None)  # Unset: each mode as the binary that runs it (below).
flags.DEFINE_enum(
    "mixed_precision",
    modes.PRECISION_AUTO,
    modes.PRECISION_CHOICES,
    f"{modes.PRECISION_HELP} Decoding takes auto as float32, as t2t-decoder decodes.",
)
flags.DEFINE_integer("beam_size", 4, "Decoding: hypotheses per sentence; 1 = greedy.")
flags.DEFINE_integer("decode_batch", 32, "Decoding: sentences decoded together.", lower_bound=1)
flags.DEFINE_integer(
    "fixed_output_length",
    30,
    "Decoding: every hypothesis gets exactly this many tokens (EOS barred before), so runs "
    "with any weights compare; at least --src_length.",
)
flags.DEFINE_integer("matmul_size", 2048, "Side of the square matrices multiplied.", lower_bound=1)


def main() -> int:
    if flag_groups.start():
        return 0
    from t2t_keras.benchmark import measure

    if FLAGS.mode == "matmul":
        # oneDNN capped below bfloat16 (ONEDNN_MAX_CPU_ISA) fails on bfloat16 products.
        capped = machine.onednn_capped_below_bfloat16(os.environ)
        results = [
            measure.matmul(precision, FLAGS.matmul_size, FLAGS.steps, FLAGS.warmup_steps)
            for precision in (("off",) if capped else ("off", "bf16"))
        ]
        for result in results:
            _print(result, results[0]["flops_per_s"])
        return 0
    hparams = flag_groups.resolve_hparams()
    if not isinstance(hparams, TransformerHParams):
        raise UserError(f"--hparams_set={FLAGS.hparams_set} is not a Transformer's hparams set.")
    hparams = with_vocabulary(hparams)
    # The CPU is split into devices before anything starts TensorFlow's runtime.
    strategy = _strategy() if FLAGS.mode == "train" else None
    fp32_rate = measure.matmul("off", FLAGS.matmul_size, 3, 1)["flops_per_s"]
    for precision in _precisions():
        rate = fp32_rate
        if precision != "off":
            rate = measure.matmul(precision, FLAGS.matmul_size, 3, 1)["flops_per_s"]
        if FLAGS.mode == "train":
            result = measure.train(
                hparams,
                strategy,
                _train_config(precision),
                FLAGS.batch_sentences,
                FLAGS.src_length,
                FLAGS.tgt_length,
                FLAGS.steps,
                FLAGS.warmup_steps,
                rate,
            )
        else:
            result = _decode(hparams, precision, rate)
        _print({"hparams_set": FLAGS.hparams_set, **result}, fp32_rate)
    return 0


def _precisions() -> list[str]:
    """--mixed_precision resolved: auto trains as t2t-trainer would, and decodes in float32,
    then also in bfloat16 (`Decoder`'s product step) where it would train in bfloat16."""
    from absl import logging

    from t2t_keras.training.hardware import resolve_mixed_precision

    precision, why = resolve_mixed_precision(FLAGS.mixed_precision)
    logging.info("Mixed precision: %s.", why)
    if FLAGS.mode == "decode" and FLAGS.mixed_precision == modes.PRECISION_AUTO:
        return ["off", "bf16"] if precision == "bf16" else ["off"]
    return [precision]


def _decode(hparams: TransformerHParams, precision: str, rate: float) -> dict:
    from t2t_keras.benchmark import measure

    try:
        return measure.decode(
            hparams,
            _xla(),
            precision,
            FLAGS.beam_size,
            FLAGS.decode_batch,
            FLAGS.src_length,
            FLAGS.fixed_output_length,
            FLAGS.steps,
            FLAGS.warmup_steps,
            rate,
        )
    except ValueError as error:
        raise UserError(str(error)) from None


def _strategy() -> Any:
    from t2t_keras.training import make_strategy, split_cpu

    if FLAGS.cpu_devices:
        split_cpu(FLAGS.cpu_devices)
    return make_strategy(FLAGS.distribution_strategy, FLAGS.num_gpus)


def _train_config(precision: str) -> Any:
    from t2t_keras.training.config import TrainConfig

    return TrainConfig(xla=_xla(), mixed_precision=precision)


def _xla() -> str:
    """--xla, or the default of the binary measured: t2t-trainer's, or t2t-decoder's."""
    if FLAGS.xla is not None:
        return str(FLAGS.xla)
    return "attention" if FLAGS.mode == "train" else "full"


def _print(measurement: dict, matmul_fp32_flops_per_s: float) -> None:
    """One JSON line: the measurement, then the machine it was measured on."""
    from t2t_keras.benchmark import host

    print(json.dumps({**measurement, **host.describe(matmul_fp32_flops_per_s)}), flush=True)


def run() -> None:
    """Console entry point."""
    program.run(main)


if __name__ == "__main__":
    run()
