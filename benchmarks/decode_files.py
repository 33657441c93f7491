r"""Decoding real files as users do: t2t-decoder, the SavedModel and CTranslate2, side by side.

From one trained model (--trained_dir, e.g. the averaged directory of a
transformer_small_cpu run of train_multi30k.py), this exports a SavedModel and
CTranslate2 models in float32 and int8 (t2t-exporter), then decodes a raw
source file (default Multi30k's test_2016_flickr) with each runtime, each as a
process of its own, the way a user runs it:

- tensorflow: `t2t-decoder --decode_from_file` (its default --xla=full);
- saved_model: a Python that loads the SavedModel with TensorFlow alone and
  sends the file's lines in batches of --batch_size, in file order, as a
  TF Serving client would;
- ctranslate2 float32 / int8: `t2t-decoder --runtime=ctranslate2`.

For each: the process's wall time for the whole file and for its first
--short_lines lines, sentences/s of the whole file, and sacreBLEU against
--reference (so a speed-up that changes outputs shows). Rounds alternate the
runtimes; the tables give medians and each runtime's ratio to CTranslate2
float32 (per round, then the median).

Then --profile_rounds profiles of the TensorFlow runtime, each in a fresh
process: the seconds of start-up (Python and imports), model load, each
compiled search shape (rows x width: its first call, compilation included),
the other search calls, and the rest (encoding, batching, writing).

    .venv/bin/python benchmarks/decode_files.py \
        --trained_dir=/tmp/m30k/train_1795671366/averaged --rounds=3

stdout: one JSON line per measurement, then the tables (markdown).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # Before the imports: the profile's start-up includes them.

import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from absl import app, flags  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
BIN = Path(sys.executable).parent
RUNTIMES = ("tensorflow", "saved_model", "ctranslate2 float32", "ctranslate2 int8")

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) to decode with.")
flags.DEFINE_string("source", str(SHARED / "test_2016_flickr.en"), "Raw source, one a line.")
flags.DEFINE_string("reference", str(SHARED / "test_2016_flickr.de"), "Its raw references.")
flags.DEFINE_integer("rounds", 3, "Rounds; each decodes the file once with every runtime.")
flags.DEFINE_integer("profile_rounds", 1, "Profiles of the TensorFlow runtime, after the rounds.")
flags.DEFINE_integer("short_lines", 10, "Lines of the short file (latency of a small job).")
flags.DEFINE_integer("batch_size", 32, "SavedModel client: sentences per request.")
flags.DEFINE_string("work_dir", None, "Where exports and outputs go; a temporary folder if unset.")
flags.DEFINE_bool("profile", False, "Internal: profile one TensorFlow decode in this process.")
flags.DEFINE_string("output", None, "Internal, with --profile: where the outputs go.")
flags.DEFINE_string("xla", "full", "The profile's --xla mode (t2t-decoder's default: full).")
FLAGS = flags.FLAGS

# The SavedModel client: TensorFlow (and tensorflow_text's ops) only.
SERVING_CLIENT = """
import sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
model_dir, source, output, batch_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
translate = tf.saved_model.load(model_dir).signatures["serving_default"]
lines = open(source, encoding="utf-8").read().splitlines()
outputs = []
for first in range(0, len(lines), batch_size):
    batch = tf.constant(lines[first : first + batch_size])
    outputs += [text.decode("utf-8") for text in translate(inputs=batch)["outputs"].numpy()]
open(output, "w", encoding="utf-8").write("".join(line + "\\n" for line in outputs))
"""


def export(trained_dir: str, work_dir: Path) -> dict[str, str]:
    """The SavedModel version directory and the CTranslate2 model directories."""
    exporter = str(BIN / "t2t-exporter")
    saved = subprocess.run(
        [exporter, f"--output_dir={trained_dir}", f"--export_dir={work_dir / 'saved_model'}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    dirs = {"saved_model": saved.stdout.splitlines()[0]}
    for quantization in ("float32", "int8"):
        target = work_dir / f"ctranslate2_{quantization}"
        subprocess.run(
            [exporter, f"--output_dir={trained_dir}", "--export_format=ctranslate2",
             f"--quantization={quantization}", f"--export_dir={target}"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        dirs[f"ctranslate2 {quantization}"] = str(target)
    return dirs


def command(runtime: str, dirs: dict[str, str], source: str, output: str) -> list[str]:
    decoder = [str(BIN / "t2t-decoder"), f"--decode_from_file={source}"]
    decoder.append(f"--decode_to_file={output}")
    if runtime == "tensorflow":
        return [*decoder, f"--output_dir={FLAGS.trained_dir}"]
    if runtime == "saved_model":
        model = dirs["saved_model"]
        return [sys.executable, "-c", SERVING_CLIENT, model, source, output, str(FLAGS.batch_size)]
    return [*decoder, "--runtime=ctranslate2", f"--ctranslate2_dir={dirs[runtime]}"]


def timed_run(argv: list[str]) -> float:
    """The process's wall time in seconds; it must succeed."""
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode:
        raise RuntimeError(f"{argv[0]} failed:\n{result.stderr[-3000:]}")
    return seconds


def bleu(output: str, reference: str) -> float:
    import sacrebleu

    hypotheses = Path(output).read_text(encoding="utf-8").splitlines()
    references = Path(reference).read_text(encoding="utf-8").splitlines()
    return round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)


def one_round(round_index: int, dirs: dict[str, str], work_dir: Path) -> list[dict[str, Any]]:
    lines = Path(FLAGS.source).read_text(encoding="utf-8").splitlines()
    short = work_dir / "short.src"
    short.write_text("".join(line + "\n" for line in lines[: FLAGS.short_lines]), "utf-8")
    # Alternate the order each round: the machine's speed drifts.
    order = RUNTIMES if round_index % 2 == 0 else tuple(reversed(RUNTIMES))
    results = []
    for runtime in order:
        name = runtime.replace(" ", "_")
        output = str(work_dir / f"{name}.out")
        whole = timed_run(command(runtime, dirs, FLAGS.source, output))
        short_seconds = timed_run(
            command(runtime, dirs, str(short), str(work_dir / f"{name}.short.out"))
        )
        result = {
            "round": round_index,
            "runtime": runtime,
            "sentences": len(lines),
            "wall_seconds": round(whole, 2),
            "sentences_per_s": round(len(lines) / whole, 1),
            "short_wall_seconds": round(short_seconds, 2),
            "bleu": bleu(output, FLAGS.reference),
        }
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


def profile_in_subprocess(work_dir: Path) -> dict[str, Any]:
    output = work_dir / "profile.out"
    argv = [sys.executable, __file__, "--profile", f"--trained_dir={FLAGS.trained_dir}"]
    argv += [f"--source={FLAGS.source}", f"--output={output}"]
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    profile = json.loads(result.stdout.strip().splitlines()[-1])
    profile["process_wall_seconds"] = round(wall, 2)
    print(json.dumps(profile), flush=True)
    return profile


def profile() -> None:
    """One TensorFlow decode of --source in this process, timed part by part."""
    from t2t_keras import catalog
    from t2t_keras.modes import Xla
    from t2t_keras.run.loading import load_trained
    from t2t_keras.search.settings import DecodeHParams
    from t2t_keras.serving import file_decoding
    from t2t_keras.serving.translator import Translator

    imported = time.monotonic()
    catalog.load()
    xla = Xla(FLAGS.xla)
    trained = load_trained(FLAGS.trained_dir, use_xla=xla.compiles_attention)
    settings = DecodeHParams().resolve(trained.hparams)
    translator = Translator(
        trained.model, trained.vocabs, settings, jit_compile=xla.compiles_whole_search
    )
    loaded = time.monotonic()
    calls: list[tuple[tuple[int, int], float, bool]] = []
    search = translator.decoder

    class TimedDecoder:
        """The Decoder, each call timed, and whether it compiled a new shape."""

        def __call__(self, batch: Any) -> Any:
            before = search.compilations()
            start = time.monotonic()
            ids, scores = search(batch)
            ids.numpy()  # Waits for the result.
            calls.append((batch.shape, time.monotonic() - start, search.compilations() > before))
            return ids, scores

    translator.decoder = TimedDecoder()  # type: ignore[assignment]
    with open(os.devnull, "w") as quiet:  # The scores line is not wanted here.
        file_decoding.decode_file(translator, FLAGS.source, FLAGS.output, out=quiet)
    done = time.monotonic()
    compiled = [
        {"shape": f"{rows}x{width}", "first_call_seconds": round(seconds, 2)}
        for (rows, width), seconds, new in calls
        if new
    ]
    searching = sum(seconds for _, seconds, new in calls if not new)
    first_calls = sum(seconds for _, seconds, new in calls if new)
    print(
        json.dumps(
            {
                "profile": f"tensorflow --xla={FLAGS.xla}",
                "startup_seconds": round(imported - STARTED, 2),
                "load_seconds": round(loaded - imported, 2),
                "compiled_shapes": len(compiled),
                "first_calls_seconds": round(first_calls, 2),
                "other_search_calls": sum(1 for *_, new in calls if not new),
                "other_search_seconds": round(searching, 2),
                "rest_seconds": round(done - loaded - first_calls - searching, 2),
                "decode_seconds": round(done - loaded, 2),
                "compiled": compiled,
            }
        )
    )


def tables(results: list[dict[str, Any]], profiles: list[dict[str, Any]]) -> str:
    rows = ["| runtime | sentences/s | wall, whole file (s) | wall, short file (s) | BLEU | "
            "sentences/s / CT2 fp32 | wall / CT2 fp32 | short wall / CT2 fp32 |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    by_round: dict[int, dict[str, dict[str, Any]]] = {}
    for result in results:
        by_round.setdefault(result["round"], {})[result["runtime"]] = result
    for runtime in RUNTIMES:
        mine = [r for r in results if r["runtime"] == runtime]
        ratios = {"rate": [], "wall": [], "short": []}
        for runs in by_round.values():
            base, this = runs["ctranslate2 float32"], runs[runtime]
            ratios["rate"].append(this["sentences_per_s"] / base["sentences_per_s"])
            ratios["wall"].append(this["wall_seconds"] / base["wall_seconds"])
            ratios["short"].append(this["short_wall_seconds"] / base["short_wall_seconds"])

        def median(key: str, runs: list[dict[str, Any]] = mine) -> float:
            return statistics.median(r[key] for r in runs)

        rows.append(
            f"| {runtime} | {median('sentences_per_s'):.1f} | {median('wall_seconds'):.2f} | "
            f"{median('short_wall_seconds'):.2f} | {median('bleu'):.2f} | "
            f"{statistics.median(ratios['rate']):.2f}x | {statistics.median(ratios['wall']):.2f}x | "
            f"{statistics.median(ratios['short']):.2f}x |"
        )
    for index, entry in enumerate(profiles):
        rows += ["", f"Profile {index + 1} of t2t-decoder (TensorFlow), seconds:", ""]
        rows.append("| start-up | load | compiled shapes | their first calls | other calls | "
                    "rest | process wall |")  # fmt: skip
        rows.append("|---|---|---|---|---|---|---|")
        rows.append(
            f"| {entry['startup_seconds']} | {entry['load_seconds']} | "
            f"{entry['compiled_shapes']} | {entry['first_calls_seconds']} | "
            f"{entry['other_search_calls']} calls, {entry['other_search_seconds']} | "
            f"{entry['rest_seconds']} | {entry['process_wall_seconds']} |"
        )
        shapes = ", ".join(f"{c['shape']} {c['first_call_seconds']}" for c in entry["compiled"])
        rows.append(f"\nFirst call of each compiled shape (rows x width, s): {shapes}")
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    del argv
    if FLAGS.profile:
        profile()
        return
    if not FLAGS.trained_dir:
        raise app.UsageError("--trained_dir is required: the trained model to decode with.")
    work_dir = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="decode_files_"))
    work_dir.mkdir(parents=True, exist_ok=True)
    dirs = export(FLAGS.trained_dir, work_dir)
    results = []
    for round_index in range(FLAGS.rounds):
        results += one_round(round_index, dirs, work_dir)
    profiles = [profile_in_subprocess(work_dir) for _ in range(FLAGS.profile_rounds)]
    print(tables(results, profiles))


if __name__ == "__main__":
    app.run(main)
