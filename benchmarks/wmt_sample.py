"""WMT end to end on the local WMT sample: datagen from each source, then a short training.

    .venv/bin/python benchmarks/wmt_sample.py --reference_minutes=30 --rounds=3

Times --problem's datagen from each source (plain text, tensorflow-datasets,
archives), trains within the budget and scores newstest2013 in both BLEU
conventions; one JSON line. Figures: docs/benchmarks.md#wmt-end-to-end.
"""

from __future__ import annotations

from t2t_keras import machine

PREPARED = machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import training_budget  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from one_device import define_flags, train_for_budget  # noqa: E402
from trained_model import decode_raw_file, load_translator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from local_tfds import write_archive, write_wmt14  # noqa: E402

from t2t_keras import catalog, registry  # noqa: E402
from t2t_keras.benchmark.budget import Budget  # noqa: E402
from t2t_keras.data import records  # noqa: E402
from t2t_keras.files import read_text_lines  # noqa: E402
from t2t_keras.metrics import bleu  # noqa: E402

SHARED_WMT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt"
HELD_OUT = 500

flags.DEFINE_string("problem", "translate_ende_wmt8k", "The WMT problem generated and trained.")
define_flags(hparams_set="transformer_small")
flags.DEFINE_integer("rounds", 3, "datagen runs per source; the median is reported.")
FLAGS = flags.FLAGS


def splits() -> dict[str, dict[str, list[str]]]:
    """{split: {language: lines}} of the sample: train, validation (dev) and test."""
    result: dict[str, dict[str, list[str]]] = {"train": {}, "validation": {}, "test": {}}
    for language in ("en", "de"):
        years = [read_text_lines(str(SHARED_WMT / f"newstest{year}.{language}"))
                 for year in range(2008, 2014)]  # fmt: skip
        result["train"][language] = [line for lines in years[:4] for line in lines]
        result["train"][language] += years[4][HELD_OUT:]
        result["validation"][language], result["test"][language] = years[5], years[4][:HELD_OUT]
    return result


def write_sources(root: Path, text: dict[str, dict[str, list[str]]]) -> dict[str, tuple]:
    """Each source's (tmp_dir, tfds_data_dir) holding the same pairs."""
    local, corpus, archives = root / "local", root / "corpus", root / "archives"
    stems = {"train": "train", "validation": "newstest2013", "test": "newstest2014"}
    for split, sides in text.items():
        for language, lines in sides.items():
            for directory, name in ((local, stems[split]), (corpus, split)):
                directory.mkdir(exist_ok=True)
                (directory / f"{name}.{language}").write_text("\n".join(lines) + "\n")
    write_wmt14(corpus, root / "tensorflow_datasets")
    write_archives(archives, text)
    return {
        "local": (local, None),
        "tfds": (root / "empty", root / "tensorflow_datasets"),
        "archives": (archives, None),
    }


def write_archives(tmp_dir: Path, text: dict[str, dict[str, list[str]]]) -> None:
    """The problem's archives in the WMT layout: all training text in the first corpus."""
    tmp_dir.mkdir(exist_ok=True)
    problem = registry.problem(FLAGS.problem)
    ours = {"train": "train", "dev": "validation", "test": "test"}
    for split, corpora in problem.corpora.items():
        for index, corpus in enumerate(corpora):
            sides = text[ours[split]] if index == 0 else {"en": [], "de": []}
            members = {corpus.source: sides["en"], corpus.target: sides["de"]}
            write_archive(tmp_dir / corpus.archive_name, members, corpus.sgm)


def datagen_rates(root: Path, sources: dict[str, tuple]) -> tuple[str, dict[str, dict]]:
    """Pairs written per second from each source (vocabulary trained once, copied in)."""
    vocab_dir = root / "vocab"
    problem = registry.problem(FLAGS.problem)
    problem.use_source("local")
    start = time.monotonic()
    problem.generate_data(str(vocab_dir), str(sources["local"][0]))
    first_seconds = time.monotonic() - start
    vocab = problem.vocab_paths(str(vocab_dir))["inputs"]
    rates: dict[str, dict] = {}
    for source, (tmp_dir, tfds_data_dir) in sources.items():
        seconds = []
        for round_index in range(FLAGS.rounds):
            data_dir = root / f"data_{source}_{round_index}"
            data_dir.mkdir()
            shutil.copy(vocab, data_dir)
            problem = registry.problem(FLAGS.problem)
            problem.use_source(source, str(tfds_data_dir) if tfds_data_dir else None)
            start = time.monotonic()
            problem.generate_data(str(data_dir), str(tmp_dir))
            seconds.append(time.monotonic() - start)
        pairs = sum(
            records.count_records(problem.data_files(str(data_dir), split))
            for split in ("train", "dev", "test")
        )
        median = statistics.median(seconds)
        rates[source] = {"pairs": pairs, "seconds": round(median, 2)}
        rates[source]["pairs_per_second"] = round(pairs / median)
    rates["local_with_vocabulary"] = {"seconds": round(first_seconds, 2)}
    return str(vocab_dir), rates


def train_and_score(data_dir: str, work_dir: Path, budget: Budget) -> dict:
    output_dir = str(work_dir / f"train_{int(time.time())}")
    summary = train_for_budget(FLAGS.problem, data_dir, output_dir, budget)
    run_dir = os.path.join(output_dir, "averaged") if FLAGS.average > 1 else output_dir
    translator = load_translator(run_dir, FLAGS.decode_hparams)
    _, hypotheses, decode_seconds = decode_raw_file(
        translator, str(SHARED_WMT / "newstest2013.en"), str(work_dir / "newstest2013.decodes")
    )
    references = read_text_lines(str(SHARED_WMT / "newstest2013.de"))
    scores = bleu.bleu_scores(hypotheses, references, "de")
    return {
        **training_budget.summary(budget),
        **summary,
        "newstest2013": {
            "sacrebleu": round(scores[0].score, 2),
            "tokenized_bleu": round(scores[1].score, 2),
            "uncased_sacrebleu": round(scores[2].score, 2),
            "signature": scores[0].signature,
            "sentences": len(hypotheses),
            "empty_outputs": sum(1 for line in hypotheses if not line.strip()),
            "decode_seconds": round(decode_seconds, 1),
        },
    }


def main(argv: list[str]) -> None:
    del argv
    catalog.load()
    for reason in PREPARED:
        logging.info(reason)
    budget, machine_facts = training_budget.resolve()
    work_dir = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="wmt_sample_"))
    work_dir.mkdir(parents=True, exist_ok=True)
    sources = write_sources(work_dir, splits())
    data_dir, rates = datagen_rates(work_dir, sources)
    summary = {"problem": FLAGS.problem, **machine_facts, "datagen": rates}
    summary.update(train_and_score(data_dir, work_dir, budget))
    print(json.dumps(summary))


if __name__ == "__main__":
    app.run(main)
