"""Real-data training: a small Transformer on Multi30k En->De for a wall-clock budget.

    .venv/bin/python benchmarks/train_multi30k.py [--reference_minutes=30] [--work_dir=DIR]
    # The PyTorch peer on the same data, vocabulary, budget and test files:
    .venv/bin/python benchmarks/peers_multi30k.py [--reference_minutes=30] [--work_dir=DIR]

Copies Multi30k (train, val) into a tmp_dir as text2text_tmpdir expects and
generates the data (8k shared BPE) once per work_dir, trains --hparams_set on
one device within the budget (`training_budget.py`: --steps, --minutes, or by
default 30 --reference_minutes; evaluation off, so the whole budget trains),
saving 30 checkpoints along the way and averaging the last --average of them
at the end (t2t-trainer's --average_checkpoints). Then, as t2t-decoder
--decode_from_file does, it translates the *raw* source file of every
--test_sets entry with the last and with the averaged checkpoint (the set's beam and
alpha unless --decode_hparams says otherwise) and scores the output
with sacreBLEU against the raw reference. Prints one JSON line: steps, target
tokens/s, the budget, the machine (CPU, flags, oneDNN, float32 matmul
rate), the training loss every 100 steps ("loss_curve", drawn by
loss_curves.py) and, per checkpoint and test set, BLEU, brevity penalty,
length ratio and the number of empty outputs for non-empty inputs.
"""

from __future__ import annotations

from t2t_keras import machine

PREPARED = machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import training_budget  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from multi30k import PROBLEM, corpus_path, prepare_data, read_lines, score  # noqa: E402
from one_device import CHECKPOINTS, train_for_budget  # noqa: E402
from quality_curve import curve  # noqa: E402

from t2t_keras import catalog, modes  # noqa: E402
from t2t_keras.run.loading import load_trained  # noqa: E402
from t2t_keras.search.settings import DecodeHParams  # noqa: E402
from t2t_keras.serving.file_decoding import decode_file  # noqa: E402
from t2t_keras.serving.translator import Translator  # noqa: E402
from t2t_keras.training.averaging import average_checkpoints  # noqa: E402
from t2t_keras.training.hardware import resolve_mixed_precision  # noqa: E402

flags.DEFINE_string("hparams_set", "transformer_small_cpu", "The hparams set trained.")
flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
flags.DEFINE_string("decode_hparams", "", "Decoding settings, as t2t-decoder's.")
flags.DEFINE_multi_string(
    "compare_decodes",
    [],
    "More decoding settings (each a --decode_hparams string, e.g. 'stopping=best_possible') "
    "to decode the first test set with the last checkpoint, reported under compared_decodes.",
)
flags.DEFINE_integer("average", 5, "Checkpoints averaged at the end.")
flags.DEFINE_list(
    "curve_minutes",
    [],
    "Also score, for each of these minutes of the budget, the average of the last --average "
    "checkpoints saved by then (quality_curve.py); every checkpoint is kept.",
)
flags.DEFINE_integer("seed", 1, "Random seed of initialization, dropout and shuffling.")
flags.DEFINE_enum(
    "mixed_precision", modes.PRECISION_AUTO, modes.PRECISION_CHOICES, modes.PRECISION_HELP
)
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def decode_test_sets(run_dir: str, name: str, decode_hparams: str, test_sets: list[str]) -> dict:
    """Each test set's raw source translated by t2t-decoder's code path, and scored."""
    trained = load_trained(run_dir)
    settings = DecodeHParams().override(decode_hparams)
    translator = Translator(trained.model, trained.vocabs, settings.resolve(trained.hparams))
    results = {}
    for test_set in test_sets:
        to_file = os.path.join(FLAGS.work_dir, f"{name}.{test_set}.decodes")
        start = time.monotonic()
        decoded = decode_file(translator, corpus_path(test_set, "en"), to_file, out=sys.stderr)
        seconds = time.monotonic() - start
        hypotheses = [translation.text for translation in decoded.translations]
        references = read_lines(corpus_path(test_set, "de"))
        results[test_set] = score(decoded.sources, hypotheses, references)
        results[test_set]["decode_seconds"] = round(seconds, 1)
    return results


def main(argv: list[str]) -> None:
    catalog.load()
    del argv
    FLAGS.work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="multi30k_")
    for reason in PREPARED:
        logging.info(reason)
    budget, machine_facts = training_budget.resolve()
    precision, why = resolve_mixed_precision(FLAGS.mixed_precision)
    logging.info("Mixed precision: %s; budget: %s.", why, budget.description)
    data_dir = prepare_data(FLAGS.work_dir)
    started = time.time()
    output_dir = os.path.join(FLAGS.work_dir, f"train_{int(started)}")
    kept = {"keep_checkpoint_max": 40} if FLAGS.curve_minutes else {}
    trained = train_for_budget(
        PROBLEM, FLAGS.hparams_set, FLAGS.hparams, data_dir, output_dir,
        budget, FLAGS.average, random_seed=FLAGS.seed, mixed_precision=precision, **kept,
    )  # fmt: skip
    summary = {
        "system": "t2t_keras",
        "hparams_set": FLAGS.hparams_set,
        "hparams": FLAGS.hparams,
        "mixed_precision": precision,
        **training_budget.summary(budget),
        **machine_facts,
        **trained,
        "checkpoints": {
            "last": decode_test_sets(output_dir, "last", FLAGS.decode_hparams, FLAGS.test_sets)
        },
    }
    if FLAGS.average > 1:
        averaged_dir = os.path.join(output_dir, "averaged")
        summary["checkpoints"][f"average_{FLAGS.average}"] = decode_test_sets(
            averaged_dir, "averaged", FLAGS.decode_hparams, FLAGS.test_sets
        )
    summary["compared_decodes"] = {
        settings: decode_test_sets(output_dir, f"last.{index}", settings, FLAGS.test_sets[:1])
        for index, settings in enumerate(FLAGS.compare_decodes)
    }
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
        return decode_test_sets(averaged_dir, name, FLAGS.decode_hparams, FLAGS.test_sets)

    minutes = [float(minute) for minute in FLAGS.curve_minutes]
    window = FLAGS.average / CHECKPOINTS  # The share of a run its average covers.
    return curve(minutes, minute_seconds, started, output_dir, score, window)


if __name__ == "__main__":
    app.run(main)
