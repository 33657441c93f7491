"""Parsing on the WSJ sample: train for a wall-clock budget, decode to trees, score as EVALB.

    .venv/bin/python benchmarks/parsing_wsj_sample.py [--reference_minutes=30] [--split=test] \
        [--beams=1,4,21] [--plot=curve.png] [--evalb=PATH/TO/evalb --evalb_prm=COLLINS.prm]

Splits the NLTK WSJ sample (../shared/data/ptb, 3,914 trees, one a line) into
the one-tree-a-line layout parsing_english_wsj16k reads: the first
--train_trees train, the next --dev_trees are the dev split (choose recipes
on it: --split=dev), the rest (414 trees) the test split. Trains
--hparams_set on one device within the budget (`training_budget.py`: --steps,
--minutes, or by default 30 --reference_minutes) with a checkpoint every
thirtieth of it, then:

  - the curve: every --curve_every-th checkpoint decoded greedily (under the
    tree constraint) and scored on --split, F1 against training minutes;
  - the result: the average of the last --average checkpoints decoded with
    each beam of --beams, as t2t-decoder does (constrained search, outputs
    made PTB trees), F1 (all and <= 40 words), outputs that needed repair,
    sentences per second;
  - the baselines: a flat tree and a right-branching tree over the same
    sentences, scored the same way.

Prints one JSON line (with the budget and the machine: CPU, flags, oneDNN,
float32 matmul rate); --plot also draws the curve with the baselines as a PNG.
"""

from __future__ import annotations

from t2t_keras import machine

PREPARED = machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import training_budget  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from one_device import train_for_budget  # noqa: E402

from t2t_keras import catalog, modes, registry  # noqa: E402
from t2t_keras.data.tree_baselines import baseline_trees  # noqa: E402
from t2t_keras.metrics import evalb  # noqa: E402
from t2t_keras.modes import XLA_MODES  # noqa: E402
from t2t_keras.run.loading import load_trained  # noqa: E402
from t2t_keras.search.settings import DecodeHParams  # noqa: E402
from t2t_keras.serving.translator import Translator  # noqa: E402
from t2t_keras.training.hardware import resolve_mixed_precision  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "ptb"
SAMPLE_FILE = SAMPLE / "wsj_0001-0199.oneline.mrg"
PROBLEM = "parsing_english_wsj16k"

flags.DEFINE_enum(
    "mixed_precision", modes.PRECISION_AUTO, modes.PRECISION_CHOICES, modes.PRECISION_HELP
)
flags.DEFINE_integer("train_trees", 3300, "The first this many sample trees train.")
flags.DEFINE_integer("dev_trees", 200, "The next this many are the dev split; the rest test.")
flags.DEFINE_enum("split", "test", ["dev", "test"], "The split decoded and scored.")
flags.DEFINE_string("hparams_set", "transformer_parsing_small", "The hparams set trained.")
flags.DEFINE_string("hparams", "", "Overrides of the hparams set.")
flags.DEFINE_list("beams", ["1", "4", "21"], "Beam sizes the final model decodes with.")
flags.DEFINE_string("decode_hparams", "", "Other decoding settings, as t2t-decoder's.")
flags.DEFINE_integer("average", 5, "Checkpoints averaged at the end; 1 = the last.")
flags.DEFINE_integer("curve_every", 5, "Every n-th checkpoint is a point of the curve; 0 = none.")
flags.DEFINE_enum("xla", "off", XLA_MODES, "As t2t-trainer's --xla.")
flags.DEFINE_integer("seed", 1, "Random seed of initialization, dropout and shuffling.")
flags.DEFINE_string("plot", None, "Write the F1 curve, with the baselines, to this PNG.")
flags.DEFINE_string("evalb", None, "An EVALB binary to score the same files with.")
flags.DEFINE_string("evalb_prm", None, "The parameter file for --evalb (COLLINS.prm).")
flags.DEFINE_string(
    "decode_run_dir", None, "Skip training: decode and score this training (or averaged) directory."
)
flags.DEFINE_string("work_dir", None, "Where data and checkpoints go; a temporary folder if unset.")
FLAGS = flags.FLAGS


def prepare_data(work_dir: str) -> str:
    """The sample split into train/dev/test.trees, generated into work_dir/data once."""
    lines = SAMPLE_FILE.read_text(encoding="utf-8").splitlines()
    tmp_dir = os.path.join(work_dir, "tmp")
    os.makedirs(tmp_dir, exist_ok=True)
    dev_end = FLAGS.train_trees + FLAGS.dev_trees
    splits = {
        "train": lines[: FLAGS.train_trees],
        "dev": lines[FLAGS.train_trees : dev_end],
        "test": lines[dev_end:],
    }
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
    trained = load_trained(run_dir)
    requested = DecodeHParams().override(FLAGS.decode_hparams).override(f"beam_size={beam_size}")
    settings = requested.resolve(trained.hparams)
    translator = Translator(
        trained.model, trained.vocabs, settings, tree_tokens=problem.tree_constraint(trained.vocabs)
    )
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
    result = {
        "beam_size": settings.search.beam_size,
        "alpha": settings.search.alpha,
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
    if FLAGS.evalb:
        result["evalb_program"] = run_evalb(gold_path, test_path)
    return result


def baselines(data_dir: str) -> dict:
    """F1 of the flat and right-branching trees over the split's sentences."""
    pairs = registry.problem(PROBLEM).text_examples(data_dir, FLAGS.split, -1)
    gold = [g for _, g in pairs]
    built = baseline_trees([s for s, _ in pairs])
    return {name: score(gold, trees) for name, trees in built.items()}


def curve(
    output_dir: str, data_dir: str, started: float, work_dir: str, machine_facts: dict
) -> list[dict]:
    """F1 (greedy, constrained) of every --curve_every-th checkpoint and of the last.

    Each point is also printed as a JSON line, with the machine's fields.
    """
    indexes = sorted(
        int(path[: -len(".index")].rsplit("-", 1)[1])
        for path in glob.glob(os.path.join(output_dir, "ckpt-*.index"))
    )
    chosen = indexes[FLAGS.curve_every - 1 :: FLAGS.curve_every] if FLAGS.curve_every else []
    if indexes and indexes[-1] not in chosen:
        chosen.append(indexes[-1])
    points = []
    for step in chosen:
        prefix = os.path.join(output_dir, f"ckpt-{step}")
        minutes = (os.path.getmtime(prefix + ".index") - started) / 60
        run_dir = os.path.join(work_dir, f"curve-{step}")
        os.makedirs(run_dir, exist_ok=True)
        for name in os.listdir(output_dir):  # The run files, and this checkpoint alone.
            source = os.path.join(output_dir, name)
            if os.path.isfile(source) and not name.startswith(("ckpt-", "checkpoint")):
                Path(run_dir, name).write_bytes(Path(source).read_bytes())
        for path in glob.glob(prefix + ".*"):
            Path(run_dir, os.path.basename(path)).write_bytes(Path(path).read_bytes())
        result = decode_and_score(run_dir, data_dir, 1, os.path.join(run_dir, "trees"))
        points.append({"step": step, "minutes": round(minutes, 1), "f1": result["f1"]})
        print(json.dumps({"curve_point": points[-1], **machine_facts}), flush=True)
    return points


def plot(points: list[dict], floor: dict, path: str) -> None:
    """F1 against training minutes, the baselines as horizontal lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(
        [p["minutes"] for p in points],
        [p["f1"] for p in points],
        "o-",
        label=f"{FLAGS.hparams_set}, greedy",
    )
    # The baselines lie close together: told apart by the line's style, named in the legend.
    for (name, result), style in zip(floor.items(), ("--", ":", "-."), strict=False):
        label = f"{name.replace('_', '-')} tree ({result['f1']:.1f})"
        axes.axhline(result["f1"], linestyle=style, color="gray", label=label)
    axes.legend(loc="upper left", fontsize=8)
    axes.set_xlabel("training minutes (2 CPU cores)")
    axes.set_ylabel(f"bracket F1, {FLAGS.split} split (greedy, constrained)")
    axes.set_xlim(0, max([p["minutes"] for p in points], default=1) * 1.05)
    axes.set_ylim(0, 100)
    axes.grid(alpha=0.3)
    figure.savefig(path, dpi=100, bbox_inches="tight")


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
    for reason in PREPARED:
        logging.info(reason)
    budget, machine_facts = training_budget.resolve()
    summary: dict = {"split": FLAGS.split, **machine_facts, "baselines": baselines(data_dir)}
    run_dir = FLAGS.decode_run_dir
    if not run_dir:
        output_dir = os.path.join(work_dir, f"train_{int(time.time())}")
        precision, why = resolve_mixed_precision(FLAGS.mixed_precision)
        logging.info("Mixed precision: %s; budget: %s.", why, budget.description)
        summary |= {"hparams_set": FLAGS.hparams_set, "hparams": FLAGS.hparams}
        started = time.time()
        trained = train_for_budget(
            PROBLEM, FLAGS.hparams_set, FLAGS.hparams, data_dir, output_dir,
            budget, FLAGS.average,
            keep_checkpoint_max=40,  # All 30 of the budget: every point of the curve.
            random_seed=FLAGS.seed, xla=FLAGS.xla, mixed_precision=precision,
        )  # fmt: skip
        summary |= {"mixed_precision": precision, **training_budget.summary(budget), **trained}
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
