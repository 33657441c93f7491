"""Fine-tuning and back-translation on Multi30k, run as the tutorial runs them.

    .venv/bin/python benchmarks/workflows.py --steps=1200 --work_dir=workflows

The commands of docs/fine_tuning_and_back_translation.md, each a t2t-* process, in
--work_dir (models there are reused); one JSON line per model.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import t2t_commands
from absl import app, flags
from multi30k import score

from t2t_keras.files import read_text_lines

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
NEWS_YEARS = ("2008", "2009", "2010", "2011", "2012")
MODELS = ("scratch", "scratch_double", "finetuned", "bt_sample", "bt_beam")

flags.DEFINE_integer("steps", 1200, "Training steps of each run (the longer plain run: twice).")
flags.DEFINE_string("work_dir", "workflows", "Where data, models and outputs are kept.")
flags.DEFINE_string("sampling", "sampling=true,seed=1", "Back-translation's sampling settings.")
FLAGS = flags.FLAGS


def t2t(binary: str, *args: str, log: Path) -> None:
    """Runs a t2t-* command, its output appended to `log` (stdout holds only this
    script's JSON lines); stops on a failure."""
    with open(log, "a") as output:
        argv = [*t2t_commands.t2t(binary), *args]
        subprocess.run(argv, check=True, stdout=output, stderr=output)


def write_raw(directory: Path, train: dict[str, list[Path]], dev: dict[str, Path]) -> None:
    """text2text_tmpdir's layout: train.src/.tgt (files concatenated), dev.src/.tgt."""
    directory.mkdir(parents=True, exist_ok=True)
    for side in ("src", "tgt"):
        text = "".join(path.read_text(encoding="utf-8") for path in train[side])
        (directory / f"train.{side}").write_text(text, encoding="utf-8")
        (directory / f"dev.{side}").write_text(dev[side].read_text(encoding="utf-8"))


def train(work: Path, name: str, *args: str, steps: int) -> float:
    """Trains `name` unless its averaged model is there; returns the seconds it took."""
    if (work / name / "averaged").exists():
        return 0.0
    start = time.monotonic()
    t2t(
        "t2t-trainer", "--problem=text2text_tmpdir", "--hparams_set=transformer_small_cpu",
        f"--output_dir={work / name}", f"--train_steps={steps}", "--save_checkpoints_steps=100",
        "--average_checkpoints=5", "--eval_every_steps=0", "--eval_bleu_examples=0",
        "--random_seed=1", *args, log=work / f"{name}.log",
    )  # fmt: skip
    return time.monotonic() - start


def evaluate(work: Path, name: str, seconds: float) -> dict:
    """sacreBLEU of the averaged model on Multi30k val and test_2016_flickr."""
    result: dict = {"model": name, "train_seconds": round(seconds, 1)}
    for split in ("val", "test_2016_flickr"):
        source, output = SHARED / "multi30k" / f"{split}.en", work / f"{name}.{split}.de"
        if not output.exists():
            t2t(
                "t2t-decoder", f"--output_dir={work / name / 'averaged'}",
                f"--decode_from_file={source}", f"--decode_to_file={output}",
                log=work / f"{name}.decode.log",
            )  # fmt: skip
        references = read_text_lines(str(SHARED / "multi30k" / f"{split}.de"))
        found = score(read_text_lines(str(source)), read_text_lines(str(output)), references)
        result[split] = {key: found[key] for key in ("bleu", "bp")}
    return result


def back_translate(work: Path, how: str) -> Path:
    """news.de translated into English by the German->English model, by `how`."""
    output = work / f"news.bt_{how}.en"
    if not output.exists():
        settings = [f"--decode_hparams={FLAGS.sampling}"] if how == "sample" else []
        t2t(
            "t2t-decoder", f"--output_dir={work / 'de_en' / 'averaged'}",
            f"--decode_from_file={work / 'news.de'}", f"--decode_to_file={output}", *settings,
            log=work / f"bt_{how}.log",
        )  # fmt: skip
    return output


def datagen(work: Path, raw: str, data: str, *args: str) -> str:
    """t2t-datagen of work/raw into work/data; the trainer's flag for that data."""
    t2t("t2t-datagen", "--problem=text2text_tmpdir", f"--tmp_dir={work / raw}",
        f"--data_dir={work / data}", *args, log=work / "datagen.log")  # fmt: skip
    return f"--data_dir={work / data}"


def run_all(work: Path, steps: int) -> dict[str, float]:
    """Every run of the tutorial, in its order; the seconds each training took."""
    multi30k, wmt = SHARED / "multi30k", SHARED / "wmt"
    news = {side: [wmt / f"newstest{y}.{lang}" for y in NEWS_YEARS] for side, lang in
            (("src", "en"), ("tgt", "de"))}  # fmt: skip
    m30k = {"src": [multi30k / "train.en"], "tgt": [multi30k / "train.de"]}
    m30k_dev = {"src": multi30k / "val.en", "tgt": multi30k / "val.de"}
    write_raw(work / "m30k_raw", m30k, m30k_dev)
    write_raw(
        work / "news_raw", news, {"src": wmt / "newstest2013.en", "tgt": wmt / "newstest2013.de"}
    )
    m30k_data = datagen(work, "m30k_raw", "m30k_data")
    news_data = datagen(work, "news_raw", "news_data")
    seconds = {"scratch": train(work, "scratch", m30k_data, steps=steps)}
    seconds["scratch_double"] = train(work, "scratch_double", m30k_data, steps=2 * steps)
    seconds["news"] = train(work, "news", news_data, steps=steps)
    vocab = datagen(work, "m30k_raw", "m30k_news_vocab", f"--vocab_from={work / 'news'}")
    warm_start = f"--warm_start_from={work / 'news'}"
    seconds["finetuned"] = train(work, "finetuned", vocab, warm_start, steps=steps)
    reverse = "--problem=text2text_tmpdir_rev"
    seconds["de_en"] = train(work, "de_en", reverse, m30k_data, steps=steps)
    (work / "news.de").write_text("".join(p.read_text(encoding="utf-8") for p in news["tgt"]))
    for how in ("sample", "beam"):
        english = back_translate(work, how)
        raw = {
            "src": [multi30k / "train.en", english],
            "tgt": [multi30k / "train.de", work / "news.de"],
        }
        write_raw(work / f"bt_{how}_raw", raw, m30k_dev)
        scratch_vocab = f"--vocab_from={work / 'scratch'}"
        data = datagen(work, f"bt_{how}_raw", f"bt_{how}_data", scratch_vocab)
        seconds[f"bt_{how}"] = train(work, f"bt_{how}", data, steps=steps)
    return seconds


def main(argv: list[str]) -> None:
    del argv
    work = Path(FLAGS.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    seconds = run_all(work, FLAGS.steps)
    facts = t2t_commands.machine_facts()
    for name in MODELS:
        line = {**evaluate(work, name, seconds.get(name, 0.0)), "steps": FLAGS.steps}
        t2t_commands.emit(line, facts)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    app.run(main)
