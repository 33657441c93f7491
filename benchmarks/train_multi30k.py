"""Quality per training minute: transformer_small_cpu on Multi30k En->De in a budget.

    .venv/bin/python benchmarks/train_multi30k.py --reference_minutes=30 --work_dir=DIR

Trains within the budget (`training_budget.py`), then scores --test_sets
decoded from their raw source by the last and the averaged checkpoint; one
JSON line. Figures: docs/benchmarks.md#quality-per-training-minute.
"""

from __future__ import annotations

from t2t_keras import machine

PREPARED = machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import training_budget  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from multi30k import PROBLEM, prepare_data, score_test_sets  # noqa: E402
from one_device import CHECKPOINTS, define_flags, train_for_budget  # noqa: E402
from quality_curve import curve  # noqa: E402
from trained_model import decode_raw_file, load_translator  # noqa: E402

from t2t_keras import catalog  # noqa: E402
from t2t_keras.training.averaging import average_checkpoints  # noqa: E402

define_flags(hparams_set="transformer_small_cpu")
flags.DEFINE_list(
    "curve_minutes",
    [],
    "Also score, for each of these minutes of the budget, the average of the last --average "
    "checkpoints saved by then (quality_curve.py); every checkpoint is kept.",
)
FLAGS = flags.FLAGS


def decode_test_sets(run_dir: str, name: str) -> dict:
    """Each test set's raw source translated by t2t-decoder's code path, and scored."""
    translator = load_translator(run_dir, FLAGS.decode_hparams)

    def decode(source: str, to_file: str) -> tuple[list[str], list[str]]:
        return decode_raw_file(translator, source, to_file)[:2]

    return score_test_sets(decode, os.path.join(FLAGS.work_dir, f"{name}."))


def main(argv: list[str]) -> None:
    catalog.load()
    del argv
    FLAGS.work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="multi30k_")
    for reason in PREPARED:
        logging.info(reason)
    budget, machine_facts = training_budget.resolve()
    data_dir = prepare_data(FLAGS.work_dir)
    started = time.time()
    output_dir = os.path.join(FLAGS.work_dir, f"train_{int(started)}")
    kept = {"keep_checkpoint_max": 40} if FLAGS.curve_minutes else {}
    trained = train_for_budget(PROBLEM, data_dir, output_dir, budget, **kept)
    summary = {
        "system": "t2t_keras",
        **training_budget.summary(budget),
        **machine_facts,
        **trained,
        "checkpoints": {"last": decode_test_sets(output_dir, "last")},
    }
    if FLAGS.average > 1:
        averaged = decode_test_sets(os.path.join(output_dir, "averaged"), "averaged")
        summary["checkpoints"][f"average_{FLAGS.average}"] = averaged
    if FLAGS.curve_minutes:
        summary["curve"] = quality_curve(
            output_dir, started, training_budget.minute_seconds(machine_facts)
        )
    print(json.dumps(summary))


def quality_curve(output_dir: str, started: float, minute_seconds: float) -> list[dict]:
    """The test sets' scores, at each --curve_minutes minute m, of the average of
    the checkpoints saved in the last --average/30 of m (`quality_curve.curve`):
    what a run of m minutes would have averaged at its end."""

    def score(saved: list[str], name: str) -> dict:
        averaged_dir = os.path.join(FLAGS.work_dir, name)
        average_checkpoints(
            output_dir, checkpoints=saved[-FLAGS.average :], averaged_dir=averaged_dir
        )
        return decode_test_sets(averaged_dir, name)

    minutes = [float(minute) for minute in FLAGS.curve_minutes]
    window = FLAGS.average / CHECKPOINTS  # The share of a run its average covers.
    return curve(minutes, minute_seconds, started, output_dir, score, window)


if __name__ == "__main__":
    app.run(main)
