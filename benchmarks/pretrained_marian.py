r"""A Marian model imported, against the original on the same weights: BLEU, outputs, speed.

Imports --marian_dir (an OPUS-MT-layout directory, e.g. the one
`peers_multi30k.py --save_marian_dir` writes) with t2t-importer, exports it
to CTranslate2 with t2t-exporter, and converts the original with
CTranslate2's own converter (`marian_peer.py convert`). Then decodes
--source in alternating rounds, a process each: t2t-decoder (our search),
t2t-decoder --runtime=ctranslate2 (our export), Hugging Face's generate, and
CTranslate2's conversion in a careful translate_batch loop (`marian_peer.py`),
every one with the model's own decoding settings (generation_config.json).

    .venv/bin/python benchmarks/pretrained_marian.py --marian_dir=DIR --rounds=3

stdout: one JSON line per measurement, then the table (markdown): sentences/s
of decoding (median of the rounds) and / Hugging Face's, BLEU, and the share
of outputs identical to Hugging Face's (ours) or to the converter's (our export).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from absl import app, flags
from rounds import markdown_table, median_ratio, round_order
from t2t_commands import decoding_run, emit, machine_facts, run, t2t
from trained_model import TEST_REFERENCE, TEST_SOURCE, source_lines

PEER = str(Path(__file__).with_name("marian_peer.py"))
OURS, OUR_EXPORT, HF, CONVERTED = (
    "t2t-decoder", "t2t-decoder --runtime=ctranslate2", "Hugging Face generate",
    "CTranslate2 converter, translate_batch loop",
)  # fmt: skip
RUNTIMES = (OURS, OUR_EXPORT, HF, CONVERTED)

flags.DEFINE_string("marian_dir", None, "The Marian directory to import.", required=True)
flags.DEFINE_string("work_dir", None, "Where the import, exports and outputs go (default: a temp).")
flags.DEFINE_string("source", TEST_SOURCE, "The raw text to translate.")
flags.DEFINE_string("reference", TEST_REFERENCE, "Its references, for BLEU.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds of every runtime.")
FLAGS = flags.FLAGS


def prepare(work: Path) -> dict[str, str]:
    """The import, our CTranslate2 export and the converter's: their directories."""
    train, export, converted = work / "train", work / "ct2_ours", work / "ct2_converted"
    if not train.exists():
        run([*t2t("t2t-importer"), "--from=marian", f"--model_dir={FLAGS.marian_dir}",
             f"--output_dir={train}"])  # fmt: skip
    if not export.exists():
        run([*t2t("t2t-exporter"), f"--output_dir={train}", "--export_format=ctranslate2",
             f"--export_dir={export}"])  # fmt: skip
    if not converted.exists():
        run([sys.executable, PEER, "convert", FLAGS.marian_dir, str(converted)])
    return {"train": str(train), "export": str(export), "converted": str(converted)}


def command(runtime: str, dirs: dict[str, str], output: str) -> list[str]:
    source = FLAGS.source
    if runtime == OURS:
        return [*t2t("t2t-decoder"), f"--output_dir={dirs['train']}",
                f"--decode_from_file={source}", f"--decode_to_file={output}"]  # fmt: skip
    if runtime == OUR_EXPORT:
        return [*t2t("t2t-decoder"), "--runtime=ctranslate2", f"--ctranslate2_dir={dirs['export']}",
                f"--decode_from_file={source}", f"--decode_to_file={output}"]  # fmt: skip
    if runtime == HF:
        return [sys.executable, PEER, "generate", FLAGS.marian_dir, source, output]
    return [
        sys.executable,
        PEER,
        "ctranslate2",
        dirs["converted"],
        FLAGS.marian_dir,
        source,
        output,
    ]


def same(a: str, b: str) -> float:
    left, right = source_lines(a), source_lines(b)
    return 100.0 * sum(x == y for x, y in zip(left, right, strict=True)) / len(left)


def main(argv: list[str]) -> None:
    from t2t_keras.metrics.bleu import sacrebleu_score

    work = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="pretrained_marian_"))
    work.mkdir(parents=True, exist_ok=True)
    machine = machine_facts()
    dirs = prepare(work)
    rounds: list[dict[str, float]] = []
    outputs = {runtime: str(work / f"{index}.out") for index, runtime in enumerate(RUNTIMES)}
    for round_index in range(FLAGS.rounds):
        measured = {}
        for runtime in round_order(RUNTIMES, round_index):
            wall, rate = decoding_run(command(runtime, dirs, outputs[runtime]))
            measured[runtime] = rate
            emit({"round": round_index, "runtime": runtime, "sentences_per_s": rate,
                  "wall_s": round(wall, 2)}, machine)  # fmt: skip
        rounds.append(measured)
    references = source_lines(FLAGS.reference)
    rows = []
    for runtime in RUNTIMES:
        bleu = sacrebleu_score(source_lines(outputs[runtime]), references).score
        anchor = outputs[CONVERTED] if runtime == OUR_EXPORT else outputs[HF]
        ratio = median_ratio(rounds, runtime, HF)
        rows.append([runtime, f"{statistics.median(r[runtime] for r in rounds):.1f}",
                     f"{ratio:.2f}x" if ratio else "", f"{bleu:.2f}",
                     f"{same(outputs[runtime], anchor):.1f}%"])  # fmt: skip
        emit({"runtime": runtime, "bleu": round(bleu, 2)}, machine)
    print(json.dumps({"work_dir": str(work), **dirs}))
    header = ["runtime", "sentences/s", "/ Hugging Face", "BLEU", "identical outputs"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    app.run(main)
