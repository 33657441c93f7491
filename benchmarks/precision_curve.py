"""Does bfloat16 mixed precision train like float32? The loss curves of both on Multi30k.

    .venv/bin/python benchmarks/precision_curve.py [--steps=300] [--work_dir=DIR]

Generates Multi30k En->De (8k shared BPE) once per work_dir, as
train_multi30k.py does, then trains --hparams_set from the same seed for
--steps updates once per --precisions entry, logging the training loss every
--log_every steps. Prints one JSON line: per precision, the logged losses and
target tokens/s; per precision other than the first, the largest relative
difference of its loss from the first's over the logged steps after
--skip_steps (the first steps' losses are large and fall fast, so a one-step
shift is no quality difference), and whether it is within --tolerance. With
--plot=FILE it also draws both curves into a PNG (matplotlib).
"""

from __future__ import annotations

import glob
import json
import os
import tempfile

import tensorflow as tf
from absl import app, flags
from multi30k import PROBLEM, prepare_data
from one_device import train_without_evaluation

from t2t_keras import catalog

flags.DEFINE_integer("steps", 300, "Updates per precision.")
flags.DEFINE_string("hparams_set", "transformer_small_cpu", "The hparams set trained.")
flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
flags.DEFINE_list(
    "precisions", ["off", "bf16"], "--mixed_precision values; the first is the reference."
)
flags.DEFINE_integer("log_every", 10, "Steps between logged losses.")
flags.DEFINE_integer("skip_steps", 50, "Logged steps before this are not compared.")
flags.DEFINE_float("tolerance", 0.02, "Largest relative loss difference that counts as tracking.")
flags.DEFINE_integer("seed", 1, "Random seed of initialization, dropout and shuffling.")
flags.DEFINE_string("plot", None, "Draw the curves into this PNG.")
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def train_curve(data_dir: str, output_dir: str, precision: str) -> dict:
    """Trains --steps updates at one precision; returns the logged losses and tokens/s."""
    result = train_without_evaluation(
        PROBLEM,
        FLAGS.hparams_set,
        FLAGS.hparams,
        data_dir,
        output_dir,
        train_steps=FLAGS.steps,
        save_checkpoints_steps=0,
        log_every_steps=FLAGS.log_every,
        random_seed=FLAGS.seed,
        deterministic=True,
        mixed_precision=precision,
    )
    return {
        "losses": logged_losses(output_dir),
        "target_tokens_per_second": round(result.target_tokens_per_second, 1),
    }


def logged_losses(output_dir: str) -> dict[int, float]:
    """{step: loss} from the training summaries in output_dir."""
    losses = {}
    for path in sorted(glob.glob(os.path.join(output_dir, "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[int(event.step)] = float(tf.make_ndarray(value.tensor))
    return dict(sorted(losses.items()))


def compare(reference: dict[int, float], other: dict[int, float]) -> dict:
    """The largest relative difference over the steps both logged after --skip_steps."""
    steps = [step for step in reference if step in other and step >= FLAGS.skip_steps]
    worst = max(abs(other[step] - reference[step]) / reference[step] for step in steps)
    return {
        "compared_steps": len(steps),
        "max_relative_difference": round(worst, 4),
        "within_tolerance": worst <= FLAGS.tolerance,
    }


def plot(curves: dict[str, dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    for precision, curve in curves.items():
        steps = list(curve["losses"])
        label = "fp32" if precision == "off" else precision
        axes.plot(steps, list(curve["losses"].values()), label=label)
    axes.set_xlabel("step")
    axes.set_ylabel("training loss (label-smoothed, per token)")
    axes.set_title(f"{FLAGS.hparams_set} on Multi30k En-De")
    axes.legend()
    figure.savefig(path, dpi=100, bbox_inches="tight")


def main(argv: list[str]) -> None:
    del argv
    catalog.load()
    FLAGS.work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="precision_")
    data_dir = prepare_data(FLAGS.work_dir)
    curves = {
        precision: train_curve(
            data_dir, os.path.join(FLAGS.work_dir, f"train_{precision}"), precision
        )
        for precision in FLAGS.precisions
    }
    reference = curves[FLAGS.precisions[0]]["losses"]
    summary = {
        "hparams_set": FLAGS.hparams_set,
        "hparams": FLAGS.hparams,
        "steps": FLAGS.steps,
        "curves": curves,
        "against_" + FLAGS.precisions[0]: {
            precision: compare(reference, curves[precision]["losses"])
            for precision in FLAGS.precisions[1:]
        },
    }
    if FLAGS.plot:
        plot(curves, FLAGS.plot)
    print(json.dumps(summary))


if __name__ == "__main__":
    app.run(main)
