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

For each: the sentences/s of decoding the whole file as the process reports
it (its last "Decoded N/N sentences" log line: from the first sentence to the
last, start-up and loading left out; the SavedModel client times its
requests), the process's wall time for the whole file and for its first
--short_lines lines, sentences/s of the whole process, and sacreBLEU against
--reference (so a speed-up that changes outputs shows). Rounds alternate the
runtimes; the tables give medians and each runtime's ratio to CTranslate2
float32 (per round, then the median). With --xla_cache (the default), the
TensorFlow runtimes keep their XLA compilations on disk as t2t-decoder does
by default (each in an emptied directory of --work_dir): the first round
pays for compiling, as a model's first run does, and its wall times are
listed apart; --noxla_cache compiles in every process.

Then --profile_rounds profiles of the TensorFlow runtime, each in a fresh
process, with an empty XLA cache and then with the one it filled: the
seconds of start-up (Python and imports), model load, the search's first
call (its one tracing, the compilation or its load from the cache, and the
search of the first block), the other calls, of all calls the blocks'
insertion (their encoding, timed apart; the rest of the calls advances the
slots), and the rest (encoding, sorting, writing), with the compiled shapes
(slots x width: one per file, two for a long tail) and the share of
slot-steps that advanced a sentence not yet done. Last,
the latency of t2t-decoder --decode_interactive: the first
--interactive_lines lines of the source typed in one by one, the seconds
from each line's Enter to its output line (TensorFlow with an empty, then a
kept cache; CTranslate2 float32).

    .venv/bin/python benchmarks/decode_files.py \
        --trained_dir=/tmp/m30k/train_1795671366/averaged --rounds=3

stdout: one JSON line per measurement, then the tables (markdown).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # Before the imports: the profile's start-up includes them.

import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from absl import app, flags  # noqa: E402
from rounds import markdown_table, median_ratio, round_order  # noqa: E402
from t2t_commands import machine_facts, run, t2t, timed_run  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
RUNTIMES = ("tensorflow", "saved_model", "ctranslate2 float32", "ctranslate2 int8")

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) to decode with.")
flags.DEFINE_string("source", str(SHARED / "test_2016_flickr.en"), "Raw source, one a line.")
flags.DEFINE_string("reference", str(SHARED / "test_2016_flickr.de"), "Its raw references.")
flags.DEFINE_integer("rounds", 3, "Rounds; each decodes the file once with every runtime.")
flags.DEFINE_integer("profile_rounds", 1, "Profiles of the TensorFlow runtime, after the rounds.")
flags.DEFINE_integer("short_lines", 10, "Lines of the short file (latency of a small job).")
flags.DEFINE_integer("batch_size", 32, "SavedModel client: sentences per request.")
flags.DEFINE_string("work_dir", None, "Where exports and outputs go; a temporary folder if unset.")
flags.DEFINE_bool(
    "xla_cache",
    True,
    "t2t-decoder keeps its compiled searches in work_dir/xla_cache (--xla_cache_dir), and the "
    "SavedModel client in work_dir/saved_model_xla_cache (TF_XLA_FLAGS), both emptied at the "
    "start: the first round pays for compiling, later rounds find what a user's second run finds.",
)
flags.DEFINE_integer("interactive_lines", 10, "Lines typed into t2t-decoder --decode_interactive.")
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
import time
start = time.monotonic()
for first in range(0, len(lines), batch_size):
    batch = tf.constant(lines[first : first + batch_size])
    outputs += [text.decode("utf-8") for text in translate(inputs=batch)["outputs"].numpy()]
rate = len(lines) / (time.monotonic() - start)
open(output, "w", encoding="utf-8").write("".join(line + "\\n" for line in outputs))
print(f"Decoded {len(lines)}/{len(lines)} sentences ({rate:.1f} sentences/s).", file=sys.stderr)
"""


def export(trained_dir: str, work_dir: Path) -> dict[str, str]:
    """The SavedModel version directory and the CTranslate2 model directories."""
    exporter = [*t2t("t2t-exporter"), f"--output_dir={trained_dir}"]
    saved = run([*exporter, f"--export_dir={work_dir / 'saved_model'}"])
    dirs = {"saved_model": saved.splitlines()[0]}
    for quantization in ("float32", "int8"):
        target = work_dir / f"ctranslate2_{quantization}"
        run([*exporter, "--export_format=ctranslate2", f"--quantization={quantization}",
             f"--export_dir={target}"])  # fmt: skip
        dirs[f"ctranslate2 {quantization}"] = str(target)
    return dirs


def cache_dirs(work_dir: Path) -> dict[str, str]:
    """Each TensorFlow runtime's XLA cache directory ("" without --xla_cache), emptied."""
    if not FLAGS.xla_cache:
        return {"tensorflow": "", "saved_model": ""}
    dirs = {"tensorflow": work_dir / "xla_cache", "saved_model": work_dir / "saved_model_xla_cache"}
    for directory in dirs.values():
        shutil.rmtree(directory, ignore_errors=True)
    return {runtime: str(directory) for runtime, directory in dirs.items()}


# The machine's fields (`machine_facts`), measured once in main and added to every line.
MACHINE: dict[str, Any] = {}


def emit(result: dict[str, Any]) -> None:
    """One JSON line: a result, then the machine it was measured on."""
    print(json.dumps({**result, **MACHINE}), flush=True)


def environment(cache_dir: str) -> dict[str, str]:
    """This process's environment, TensorFlow's XLA cache set to cache_dir ("": none)."""
    flag = f"--tf_xla_persistent_cache_directory={cache_dir}" if cache_dir else ""
    return {**os.environ, "TF_XLA_FLAGS": flag}


def runtime_command(
    runtime: str, dirs: dict[str, str], caches: dict[str, str], source: str, output: str
) -> list[str]:
    """The process that decodes `source` into `output` with `runtime`."""
    decoder = [*t2t("t2t-decoder"), f"--decode_from_file={source}"]
    decoder.append(f"--decode_to_file={output}")
    if runtime == "tensorflow":
        return [*decoder, f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={caches[runtime]}"]
    if runtime == "saved_model":
        model = dirs["saved_model"]
        return [sys.executable, "-c", SERVING_CLIENT, model, source, output, str(FLAGS.batch_size)]
    return [*decoder, "--runtime=ctranslate2", f"--ctranslate2_dir={dirs[runtime]}"]


def interactive(dirs: dict[str, str], work_dir: Path) -> list[dict[str, Any]]:
    """Typed-in latency of t2t-decoder: TensorFlow with an empty, then a kept XLA cache; CTranslate2."""
    from t2t_keras.benchmark.latency import typed_line_latencies

    lines = Path(FLAGS.source).read_text(encoding="utf-8").splitlines()[: FLAGS.interactive_lines]
    cache = work_dir / "interactive_xla_cache"
    shutil.rmtree(cache, ignore_errors=True)
    decoder = [*t2t("t2t-decoder"), "--decode_interactive"]
    runs = {
        "tensorflow, empty XLA cache": [*decoder, f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={cache}"],
        "tensorflow, XLA cache kept": [*decoder, f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={cache}"],
        "ctranslate2 float32": [*decoder, "--runtime=ctranslate2", f"--ctranslate2_dir={dirs['ctranslate2 float32']}"],
    }  # fmt: skip
    results = []
    for name, argv in runs.items():
        seconds = typed_line_latencies(argv, lines, environment(""))
        result = {
            "interactive": name,
            "first_line_seconds": round(seconds[0], 3),
            "later_lines_median_seconds": round(statistics.median(seconds[1:]), 3),
            "later_lines_max_seconds": round(max(seconds[1:]), 3),
        }
        emit(result)
        results.append(result)
    return results


def decoding_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """A decoding process's wall seconds, and the sentences/s it reports for its
    decoding alone (its last "Decoded N/N sentences (X sentences/s)" line: from
    its first sentence to its last, without start-up, loading or writing)."""
    start = time.monotonic()
    finished = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if finished.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{finished.stderr[-3000:]}")
    rates = re.findall(r"Decoded (\d+)/\1 sentences \(([\d.]+) sentences/s\)", finished.stderr)
    return seconds, float(rates[-1][1]) if rates else float("nan")


def bleu(output: str, reference: str) -> float:
    import sacrebleu

    hypotheses = Path(output).read_text(encoding="utf-8").splitlines()
    references = Path(reference).read_text(encoding="utf-8").splitlines()
    return round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)


def one_round(
    round_index: int, dirs: dict[str, str], caches: dict[str, str], work_dir: Path
) -> list[dict[str, Any]]:
    lines = Path(FLAGS.source).read_text(encoding="utf-8").splitlines()
    short = work_dir / "short.src"
    short.write_text("".join(line + "\n" for line in lines[: FLAGS.short_lines]), "utf-8")
    results = []
    for runtime in round_order(RUNTIMES, round_index):
        name = runtime.replace(" ", "_")
        output = str(work_dir / f"{name}.out")
        env = environment(caches[runtime] if runtime == "saved_model" else "")
        whole, rate = decoding_run(
            runtime_command(runtime, dirs, caches, FLAGS.source, output), env
        )
        short_output = str(work_dir / f"{name}.short.out")
        short_command = runtime_command(runtime, dirs, caches, str(short), short_output)
        short_seconds = timed_run(short_command, env)
        result = {
            "round": round_index,
            "runtime": runtime,
            "sentences": len(lines),
            "wall_seconds": round(whole, 2),
            "sentences_per_s": round(len(lines) / whole, 1),
            "decoding_sentences_per_s": rate,
            "short_wall_seconds": round(short_seconds, 2),
            "bleu": bleu(output, FLAGS.reference),
        }
        emit(result)
        results.append(result)
    return results


def profile_in_subprocess(work_dir: Path, cache_dir: str, name: str) -> dict[str, Any]:
    output = work_dir / "profile.out"
    argv = [sys.executable, __file__, "--profile", f"--trained_dir={FLAGS.trained_dir}"]
    argv += [f"--source={FLAGS.source}", f"--output={output}"]
    start = time.monotonic()
    stdout = run(argv, environment(cache_dir))
    wall = time.monotonic() - start
    profile = json.loads(stdout.strip().splitlines()[-1])
    profile["process_wall_seconds"] = round(wall, 2)
    profile["cache"] = name
    emit(profile)
    return profile


def profile() -> None:
    """One TensorFlow decode of --source in this process, timed part by part."""
    from t2t_keras import machine

    machine.prepare_tensorflow()  # As t2t-decoder, before TensorFlow loads.
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
    search = translator.search
    finish = search.finish
    calls: list[float] = []  # Seconds of each compiled call, the host's work on its results out.

    def timed_finish(rows: Any, numbers: Any = None) -> Any:
        """The slots' groups, each compiled call timed (the first one traces and compiles)."""
        groups = finish(rows, numbers)
        while True:
            start = time.monotonic()
            group = next(groups, None)
            if group is None:
                return
            calls.append(time.monotonic() - start)
            yield group

    search.finish = timed_finish
    with open(os.devnull, "w") as quiet:  # The scores line is not wanted here.
        file_decoding.decode_file(translator, FLAGS.source, FLAGS.output, out=quiet)
    done = time.monotonic()
    first_call, other_calls = (calls[0], calls[1:]) if calls else (0.0, [])
    insert = block_encoding_seconds(trained.model, search) * len(calls)
    print(
        json.dumps(
            {
                "profile": f"tensorflow --xla={FLAGS.xla}",
                "startup_seconds": round(imported - STARTED, 2),
                "load_seconds": round(loaded - imported, 2),
                "compiled_shapes": search.compilations(),
                "first_calls_seconds": round(first_call, 2),
                "other_search_calls": len(other_calls),
                "other_search_seconds": round(sum(other_calls), 2),
                "rest_seconds": round(done - loaded - sum(calls), 2),
                "decode_seconds": round(done - loaded, 2),
                "insert_seconds": round(insert, 2),
                "busy_slot_steps": round(search.busy_steps / max(search.slot_steps, 1), 4),
                "slot_steps": search.slot_steps,
            }
        )
    )


def block_encoding_seconds(model: Any, search: Any) -> float:
    """What inserting a block into the slots costs, timed apart: its encoding (the
    encoder and each decoder layer's keys and values), compiled as the search
    is, at the block shape of each slot shape searched (their mean)."""
    import tensorflow as tf

    from t2t_keras.search.slots import BLOCK_SLOTS

    encode = tf.function(lambda ids: model.encode_for_decoding(ids, search.beams), jit_compile=True)
    seconds = []
    for count, width, _ in search.searched_shapes():
        block = tf.zeros([BLOCK_SLOTS * count, width], tf.int32)
        tf.nest.map_structure(lambda tensor: tensor.numpy(), encode(block))  # Compiled.
        start = time.monotonic()
        for _ in range(5):
            tf.nest.map_structure(lambda tensor: tensor.numpy(), encode(block))
        seconds.append((time.monotonic() - start) / 5)
    return statistics.mean(seconds) if seconds else 0.0


def tables(
    results: list[dict[str, Any]], profiles: list[dict[str, Any]], latencies: list[dict[str, Any]]
) -> str:
    header = [
        "runtime",
        "sentences/s, decoding",
        "decoding / CT2 fp32",
        "sentences/s, process",
        "wall, whole file (s)",
        "wall, short file (s)",
        "BLEU",
        "sentences/s / CT2 fp32",
        "wall / CT2 fp32",
        "short wall / CT2 fp32",
        "round 1 wall, whole / short (s)",
    ]
    rows = [markdown_table(header, [runtime_row(runtime, results) for runtime in RUNTIMES])]
    for entry in profiles:
        rows += profile_rows(entry)
    if latencies:
        rows += ["", "t2t-decoder --decode_interactive, seconds from Enter to output:", ""]
        header = ["runtime", "first line", "later lines, median", "later lines, max"]
        keys = (
            "interactive",
            "first_line_seconds",
            "later_lines_median_seconds",
            "later_lines_max_seconds",
        )
        rows.append(markdown_table(header, [[r[key] for key in keys] for r in latencies]))
    return "\n".join(rows)


def runtime_row(runtime: str, results: list[dict[str, Any]]) -> list[str]:
    """One runtime's medians, its ratios to CTranslate2 float32, and its first (cold) round."""
    mine = [r for r in results if r["runtime"] == runtime]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in mine)

    def ratio(key: str) -> str:
        rounds: dict[int, dict[str, float]] = {}
        for r in results:
            rounds.setdefault(r["round"], {})[r["runtime"]] = r[key]
        return f"{median_ratio(list(rounds.values()), runtime, 'ctranslate2 float32'):.2f}x"

    first = min(mine, key=lambda r: r["round"])
    return [
        runtime,
        f"{median('decoding_sentences_per_s'):.1f}",
        ratio("decoding_sentences_per_s"),
        f"{median('sentences_per_s'):.1f}",
        f"{median('wall_seconds'):.2f}",
        f"{median('short_wall_seconds'):.2f}",
        f"{median('bleu'):.2f}",
        ratio("sentences_per_s"),
        ratio("wall_seconds"),
        ratio("short_wall_seconds"),
        f"{first['wall_seconds']:.2f} / {first['short_wall_seconds']:.2f}",
    ]


def profile_rows(entry: dict[str, Any]) -> list[str]:
    header = [
        "start-up",
        "load",
        "compiled shapes",
        "first call (trace, compile, search)",
        "other calls",
        "of all calls, inserting blocks",
        "rest",
        "process wall",
    ]
    row = [
        entry["startup_seconds"],
        entry["load_seconds"],
        entry["compiled_shapes"],
        entry["first_calls_seconds"],
        f"{entry['other_search_calls']} calls, {entry['other_search_seconds']}",
        entry["insert_seconds"],
        entry["rest_seconds"],
        entry["process_wall_seconds"],
    ]
    return [
        "",
        f"Profile of t2t-decoder (TensorFlow), XLA cache {entry['cache']}, seconds:",
        "",
        markdown_table(header, [row]),
        f"\nSlot-steps that advanced a sentence not yet done: {entry['busy_slot_steps']:.1%} "
        f"of {entry['slot_steps']}.",
    ]


def main(argv: list[str]) -> None:
    del argv
    if FLAGS.profile:
        profile()
        return
    if not FLAGS.trained_dir:
        raise app.UsageError("--trained_dir is required: the trained model to decode with.")
    work_dir = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="decode_files_"))
    work_dir.mkdir(parents=True, exist_ok=True)
    MACHINE.update(machine_facts(environment("")))
    dirs = export(FLAGS.trained_dir, work_dir)
    caches = cache_dirs(work_dir)
    results = []
    for round_index in range(FLAGS.rounds):
        results += one_round(round_index, dirs, caches, work_dir)
    profiles = []
    profile_cache = work_dir / "profile_xla_cache"
    for _ in range(FLAGS.profile_rounds):
        shutil.rmtree(profile_cache, ignore_errors=True)
        profiles.append(profile_in_subprocess(work_dir, str(profile_cache), "empty"))
        if FLAGS.xla_cache:
            profiles.append(profile_in_subprocess(work_dir, str(profile_cache), "kept"))
    latencies = interactive(dirs, work_dir) if FLAGS.interactive_lines > 1 else []
    print(tables(results, profiles, latencies))


if __name__ == "__main__":
    app.run(main)
