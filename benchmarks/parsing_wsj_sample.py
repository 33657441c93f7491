"""Parsing on the WSJ sample: train for a wall-clock budget, decode to trees, score as EVALB.

    .venv/bin/python benchmarks/parsing_wsj_sample.py --reference_minutes=30 --plot=curve.png

Trains on the NLTK WSJ sample within the budget (`training_budget.py`), then
scores --split: greedy along the run (--curve_minutes), the averaged model
with each of --beams, and flat and right-branching trees. One JSON line;
--plot draws the curve. Figures: docs/benchmarks.md#parsing-on-a-cpu.
"""

from __future__ import annotations

from t2t_keras import machine

PREPARED = machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import quality_curve  # noqa: E402
import training_budget  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from one_device import define_flags, train_for_budget  # noqa: E402
from t2t_commands import emit  # noqa: E402
from trained_model import load_translator  # noqa: E402

from t2t_keras import catalog, registry  # noqa: E402
from t2t_keras.data.tree_baselines import baseline_trees  # noqa: E402
from t2t_keras.metrics import evalb  # noqa: E402
from t2t_keras.modes import XLA_MODES  # noqa: E402
from t2t_keras.training.averaging import average_checkpoints  # noqa: E402

SAMPLE_FILE = Path(__file__).resolve().parents[2] / "shared/data/ptb/wsj_0001-0199.oneline.mrg"
PROBLEM = "parsing_english_wsj16k"

define_flags(hparams_set="transformer_parsing_small")
flags.DEFINE_integer("train_trees", 3300, "The first this many sample trees train.")
flags.DEFINE_integer("dev_trees", 200, "The next this many are the dev split; the rest test.")
flags.DEFINE_enum("split", "test", ["dev", "test"], "The split decoded and scored.")
flags.DEFINE_list("beams", ["1", "4", "21"], "Beam sizes the final model decodes with.")
flags.DEFINE_list("curve_minutes", ["5", "10", "15", "20", "25", "30"], "Minutes of the budget "
                  "the curve scores the newest checkpoint at.")  # fmt: skip
flags.DEFINE_enum("xla", "off", XLA_MODES, "As t2t-trainer's --xla.")
flags.DEFINE_string("plot", None, "Write the F1 curve, with the baselines, to this PNG.")
FLAGS = flags.FLAGS


def prepare_data(work_dir: str) -> str:
    """The sample split into train/dev/test.trees, generated into work_dir/data once."""
    lines = SAMPLE_FILE.read_text(encoding="utf-8").splitlines()
    tmp_dir = os.path.join(work_dir, "tmp")
    os.makedirs(tmp_dir, exist_ok=True)
    train_end, dev_end = FLAGS.train_trees, FLAGS.train_trees + FLAGS.dev_trees
    splits = {"train": lines[:train_end], "dev": lines[train_end:dev_end], "test": lines[dev_end:]}
    for split, trees in splits.items():
        Path(tmp_dir, f"{split}.trees").write_text("\n".join(trees) + "\n", encoding="utf-8")
    data_dir = os.path.join(work_dir, "data")
    registry.problem(PROBLEM).generate_data(data_dir, tmp_dir)
    return data_dir


def score(gold: list[str], trees: list[str]) -> dict:
    """EVALB's F1 of all sentences and of those of at most 40 words."""
    everything, short = evalb.summarize(evalb.score_lines(gold, trees))
    return {
        "f1": round(everything.f1, 2),
        "f1_40": round(short.f1, 2),
        "recall": round(everything.recall, 2),
        "precision": round(everything.precision, 2),
        "complete_match": round(everything.complete_match_percent, 2),
        "error_sentences": everything.errors,
    }


def decode_and_score(run_dir: str, data_dir: str, beam_size: int, files_dir: str) -> dict:
    """The split decoded to trees as t2t-decoder does (constrained), and scored as EVALB does."""
    problem = registry.problem(PROBLEM)
    translator = load_translator(run_dir, FLAGS.decode_hparams, f"beam_size={beam_size}")
    pairs = problem.text_examples(data_dir, FLAGS.split, -1)
    sources, gold = [s for s, _ in pairs], [g for _, g in pairs]
    start = time.monotonic()
    translations = translator.translate([problem.model_input(s) for s in sources])
    seconds = time.monotonic() - start
    trees, repairs = problem.output_trees(sources, [t.text for t in translations])
    os.makedirs(files_dir, exist_ok=True)
    gold_path, test_path = (os.path.join(files_dir, f"{n}.trees") for n in ("gold", "parsed"))
    Path(gold_path).write_text("\n".join(gold) + "\n", encoding="utf-8")
    Path(test_path).write_text("\n".join(trees) + "\n", encoding="utf-8")
    return {
        "beam_size": translator.settings.search.beam_size,
        "alpha": translator.settings.search.alpha,
        "sentences": len(sources),
        **score(gold, trees),
        "repaired": repairs.repaired,
        "repaired_share": round(repairs.repaired / max(len(sources), 1), 4),
        "repairs": dict(repairs.rules),
        "distinct_outputs": len({t.text for t in translations}),
        "decode_seconds": round(seconds, 1),
        "sentences_per_second": round(len(sources) / seconds, 2),
        "files": [gold_path, test_path],
    }


def baselines(data_dir: str) -> dict:
    """F1 of the flat and right-branching trees over the split's sentences."""
    pairs = registry.problem(PROBLEM).text_examples(data_dir, FLAGS.split, -1)
    gold = [g for _, g in pairs]
    built = baseline_trees([s for s, _ in pairs])
    return {name: score(gold, trees) for name, trees in built.items()}


def curve(output_dir: str, data_dir: str, started: float, work_dir: str, facts: dict) -> list:
    """Greedy F1 (constrained) of the newest checkpoint by each --curve_minutes minute of
    the budget (`quality_curve.curve`); each point also printed as a JSON line."""

    def score(saved: list[str], name: str) -> dict:
        run_dir = os.path.join(work_dir, name)
        # The run files and this checkpoint alone (an average of one).
        average_checkpoints(output_dir, checkpoints=saved[-1:], averaged_dir=run_dir)
        f1 = decode_and_score(run_dir, data_dir, 1, f"{run_dir}-trees")["f1"]
        emit({"curve_point": {"name": name, "f1": f1}}, facts)
        return {"f1": f1}

    minutes = [float(minute) for minute in FLAGS.curve_minutes]
    seconds = training_budget.minute_seconds(facts)
    return quality_curve.curve(minutes, seconds, started, output_dir, score)


def plot(points: list[dict], floor: dict, path: str) -> None:
    """F1 against training minutes, the baselines as horizontal lines."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4))
    axes = figure.add_subplot()
    minutes = [p["minutes"] for p in points]
    axes.plot(minutes, [p["f1"] for p in points], "o-", label=f"{FLAGS.hparams_set}, greedy")
    # The baselines lie close together: told apart by the line's style, named in the legend.
    for (name, result), style in zip(floor.items(), ("--", ":", "-."), strict=False):
        label = f"{name.replace('_', '-')} tree ({result['f1']:.1f})"
        axes.axhline(result["f1"], linestyle=style, color="gray", label=label)
    axes.legend(loc="upper left", fontsize=8)
    axes.set_xlabel("training minutes (2 CPU cores)")
    axes.set_ylabel(f"bracket F1, {FLAGS.split} split (greedy, constrained)")
    axes.set_xlim(0, max(minutes, default=1) * 1.05)
    axes.set_ylim(0, 100)
    axes.grid(alpha=0.3)
    figure.savefig(path, dpi=100, bbox_inches="tight")


def main(argv: list[str]) -> None:
    del argv
    catalog.load()
    if not SAMPLE_FILE.exists():
        raise SystemExit(f"{SAMPLE_FILE} is absent: this benchmark needs ../shared/data/ptb.")
    work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix="parsing_")
    data_dir = prepare_data(work_dir)
    for reason in PREPARED:
        logging.info(reason)
    budget, machine_facts = training_budget.resolve()
    summary: dict = {"split": FLAGS.split, **machine_facts, "baselines": baselines(data_dir)}
    started = time.time()
    output_dir = os.path.join(work_dir, f"train_{int(started)}")
    # keep_checkpoint_max: all 30 of the budget, every point of the curve.
    trained = train_for_budget(
        PROBLEM, data_dir, output_dir, budget, keep_checkpoint_max=40, xla=FLAGS.xla
    )
    summary |= {**training_budget.summary(budget), **trained}
    summary["curve"] = curve(output_dir, data_dir, started, work_dir, machine_facts)
    if FLAGS.plot:
        plot(summary["curve"], summary["baselines"], FLAGS.plot)
    run_dir = os.path.join(output_dir, "averaged") if FLAGS.average > 1 else output_dir
    summary["run_dir"] = run_dir
    summary["model"] = [
        decode_and_score(run_dir, data_dir, int(beam), os.path.join(work_dir, f"beam{beam}"))
        for beam in FLAGS.beams
    ]
    print(json.dumps(summary))


if __name__ == "__main__":
    app.run(main)
