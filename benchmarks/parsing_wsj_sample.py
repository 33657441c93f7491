"""Parsing on the WSJ sample: train for a wall-clock budget, decode to trees, score as EVALB.

    .venv/bin/python benchmarks/parsing_wsj_sample.py [--minutes=30] [--beam_size=21] \
        [--evalb=PATH/TO/evalb --evalb_prm=COLLINS.prm] [--work_dir=DIR]

Splits the NLTK WSJ sample (../shared/data/ptb, 3,914 trees, one a line) into
the one-tree-a-line layout parsing_english_wsj16k reads: the first
--train_trees for training (the last 200 of them also as the dev split, which
only datagen needs: evaluation is off so the whole budget trains), the rest
as the test split. Generates the data, trains --hparams_set on one device for
--minutes, averages the last --average checkpoints, then decodes the test
sentences with the paper's parsing search (beam 21, alpha 0.3, input + 300
unless told otherwise) exactly as t2t-decoder does: outputs repaired into PTB
trees and scored by EVALB's rules against the gold trees. With --evalb, the
EVALB program scores the same files too. Prints one JSON line: training
steps and tokens/s, F1 (all and <= 40 words), error sentences, repaired
outputs by rule, and decode speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from absl import app, flags
from one_device import budget, run_summary, train_without_evaluation

from t2t_keras import catalog, registry
from t2t_keras.decoding.decode import report_progress
from t2t_keras.decoding.decode_hparams import DecodeHParams
from t2t_keras.decoding.translate import Translator
from t2t_keras.metrics import evalb
from t2t_keras.run.loading import load_trained

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "ptb"
SAMPLE_FILE = SAMPLE / "wsj_0001-0199.oneline.mrg"
PROBLEM = "parsing_english_wsj16k"

flags.DEFINE_float("minutes", 30.0, "Training budget in minutes.")
flags.DEFINE_integer("train_trees", 3500, "The first this many sample trees train.")
flags.DEFINE_string("hparams_set", "transformer_parsing_small", "The hparams set trained.")
flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
flags.DEFINE_string(
    "decode_hparams", "", "Decoding settings, as t2t-decoder's (default: the set's)."
)
flags.DEFINE_integer("average", 5, "Checkpoints averaged at the end; 1 = the last.")
flags.DEFINE_enum(
    "xla",
    "off",
    ["off", "attention", "full"],
    "As t2t-trainer's --xla. Off by default here: linearized trees spread over ~45 length "
    "buckets, and compiling each bucket's attention eats minutes of a short budget.",
)
flags.DEFINE_integer("seed", 1, "Random seed of initialization, dropout and shuffling.")
flags.DEFINE_string("evalb", None, "An EVALB binary to score the same files with.")
flags.DEFINE_string("evalb_prm", None, "The parameter file for --evalb (COLLINS.prm).")
flags.DEFINE_string(
    "decode_run_dir",
    None,
    "Skip training: decode and score this training (or averaged) directory of an earlier "
    "run in the same --work_dir.",
)
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def prepare_data(work_dir: str) -> str:
    """The sample split into train/dev/test.trees, generated into work_dir/data once."""
    lines = SAMPLE_FILE.read_text(encoding="utf-8").splitlines()
    tmp_dir = os.path.join(work_dir, "tmp")
    os.makedirs(tmp_dir, exist_ok=True)
    splits = {
        "train": lines[: FLAGS.train_trees],
        "dev": lines[FLAGS.train_trees - 200 : FLAGS.train_trees],
        "test": lines[FLAGS.train_trees :],
    }
    for split, trees in splits.items():
        Path(tmp_dir, f"{split}.trees").write_text("\n".join(trees) + "\n", encoding="utf-8")
    data_dir = os.path.join(work_dir, "data")
    registry.problem(PROBLEM).generate_data(data_dir, tmp_dir)
    return data_dir


def train_for_budget(data_dir: str, output_dir: str) -> dict:
    """Trains for --minutes; returns steps, seconds and target tokens/s."""
    result = train_without_evaluation(
        PROBLEM,
        FLAGS.hparams_set,
        FLAGS.hparams,
        data_dir,
        output_dir,
        **budget(FLAGS.minutes, FLAGS.average),
        log_every_steps=100,
        random_seed=FLAGS.seed,
        xla=FLAGS.xla,
    )
    return run_summary(result)


def decode_and_score(run_dir: str, data_dir: str, work_dir: str) -> dict:
    """The test split decoded to trees as t2t-decoder does, and scored as EVALB does."""
    problem = registry.problem(PROBLEM)
    trained = load_trained(run_dir)
    settings = DecodeHParams().override(FLAGS.decode_hparams).resolved(trained.hparams)
    translator = Translator(trained.model, trained.vocabs, settings)
    pairs = problem.text_examples(data_dir, "test", -1)
    sources, gold = [s for s, _ in pairs], [g for _, g in pairs]
    start = time.monotonic()
    translations = translator.translate([problem.model_input(s) for s in sources], report_progress)
    seconds = time.monotonic() - start
    raw_path = os.path.join(work_dir, "test.outputs")
    Path(raw_path).write_text("".join(f"{t.text}\n" for t in translations), encoding="utf-8")
    trees, repairs = problem.output_trees(sources, [t.text for t in translations])
    gold_path, test_path = (os.path.join(work_dir, f"test.{n}.trees") for n in ("gold", "parsed"))
    Path(gold_path).write_text("\n".join(gold) + "\n", encoding="utf-8")
    Path(test_path).write_text("\n".join(trees) + "\n", encoding="utf-8")
    everything, short = evalb.summarize(evalb.score_lines(gold, trees))
    result = {
        "beam_size": settings.beam_size,
        "alpha": settings.alpha,
        "extra_length": settings.extra_length,
        "sentences": len(sources),
        "f1": round(everything.f1, 2),
        "f1_40": round(short.f1, 2),
        "recall": round(everything.recall, 2),
        "precision": round(everything.precision, 2),
        "complete_match": round(everything.complete_match_percent, 2),
        "error_sentences": everything.errors,
        "repaired": repairs.repaired,
        "repairs": dict(repairs.rules),
        "decode_seconds": round(seconds, 1),
        "sentences_per_second": round(len(sources) / seconds, 2),
        "files": [gold_path, test_path, raw_path],
    }
    if FLAGS.evalb:
        result["evalb_program"] = run_evalb(gold_path, test_path)
    return result


def run_evalb(gold_path: str, test_path: str) -> dict:
    """Bracketing F1 of the EVALB program on the same files (its summary's first lines)."""
    command = [
        FLAGS.evalb,
        *(["-p", FLAGS.evalb_prm] if FLAGS.evalb_prm else []),
        gold_path,
        test_path,
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    values = [
        line.split("=")[1].strip() for line in output.splitlines() if "Bracketing FMeasure" in line
    ]
    return {"f1": float(values[0]), "f1_40": float(values[1])} if len(values) >= 2 else {}


def main(argv: list[str]) -> None:
    del argv
    catalog.load()
    if not SAMPLE_FILE.exists():
        raise SystemExit(f"{SAMPLE_FILE} is absent: this benchmark needs ../shared/data/ptb.")
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="parsing_")
    data_dir = prepare_data(work_dir)
    summary: dict = {"run_dir": FLAGS.decode_run_dir}
    run_dir = FLAGS.decode_run_dir
    if not run_dir:
        output_dir = os.path.join(work_dir, f"train_{int(time.time())}")
        summary = {"hparams_set": FLAGS.hparams_set, "hparams": FLAGS.hparams}
        summary |= {"minutes": FLAGS.minutes, **train_for_budget(data_dir, output_dir)}
        run_dir = os.path.join(output_dir, "averaged") if FLAGS.average > 1 else output_dir
    summary["test"] = decode_and_score(run_dir, data_dir, work_dir)
    print(json.dumps(summary))


if __name__ == "__main__":
    app.run(main)
