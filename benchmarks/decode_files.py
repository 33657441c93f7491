r"""Decoding real text as users do: t2t-decoder, the SavedModel and CTranslate2, side by side.

Exports --trained_dir and decodes --source with each runtime, a process
each, in alternating rounds: t2t-decoder (our search, and --runtime=ctranslate2
on the float32 and int8 exports), a SavedModel client, and CTranslate2 called
as a careful user calls it on the float32 export (`ctranslate2_peer.py`), the
anchor of the ratios; then profiles a t2t-decoder process and times lines
typed into it. Method and figures: docs/benchmarks.md#decoding-real-text.

    .venv/bin/python benchmarks/decode_files.py --trained_dir=TRAIN/averaged --rounds=3

stdout: one JSON line per measurement, then the tables (markdown).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # Before the imports: the profile's start-up includes them.

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from absl import app, flags  # noqa: E402
from rounds import markdown_table, median_ratio, round_order  # noqa: E402
from t2t_commands import decoding_run, emit, machine_facts, t2t, timed_run  # noqa: E402
from trained_model import (  # noqa: E402
    EXPORTS,
    TEST_REFERENCE,
    TEST_SOURCE,
    decode_raw_file,
    export,
    load_translator,
    source_lines,
    xla_cache_environment,
)

# The careful translate_batch loop on the float32 export: the ratios' anchor; and the
# same with a CTranslate2 worker a core, every chunk submitted at once.
LOOP, PARALLEL_LOOP = "ctranslate2 loop", "ctranslate2 parallel loop"
RUNTIMES = ("tensorflow", *EXPORTS, LOOP, PARALLEL_LOOP)
PEER = str(Path(__file__).with_name("ctranslate2_peer.py"))

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) to decode with.")
flags.DEFINE_string("source", TEST_SOURCE, "Raw source, one a line.")
flags.DEFINE_string("reference", TEST_REFERENCE, "Its raw references.")
flags.DEFINE_list("runtimes", list(RUNTIMES), f"The runtimes, of {', '.join(RUNTIMES)}.")
flags.DEFINE_integer("rounds", 3, "Rounds; each decodes the file once with every runtime.")
flags.DEFINE_integer("short_lines", 10, "Lines of the short file (latency of a small job).")
flags.DEFINE_integer("batch_size", 32, "SavedModel client: sentences per request.")
flags.DEFINE_string("work_dir", None, "Where exports and outputs go; a temporary folder if unset.")
flags.DEFINE_integer("interactive_lines", 10, "Lines typed into t2t-decoder --decode_interactive.")
flags.DEFINE_bool("profile", False, "Internal: profile one TensorFlow decode in this process.")
flags.DEFINE_string("output", None, "Internal, with --profile: where the outputs go.")
FLAGS = flags.FLAGS

# The SavedModel client, warmed up as TF Serving warms a model it loads, then timed.
SERVING_CLIENT = """
import sys, time
import tensorflow as tf
import tensorflow_text  # noqa: F401
from t2t_keras.export.warmup import replay_warmup
model_dir, source, output, batch_size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
translate = tf.saved_model.load(model_dir).signatures["serving_default"]
replay_warmup(model_dir, translate)
lines = open(source, encoding="utf-8").read().splitlines()
start = time.monotonic()
batches = (tf.constant(lines[first : first + batch_size]) for first in range(0, len(lines), batch_size))
outputs = [t.decode("utf-8") for batch in batches for t in translate(inputs=batch)["outputs"].numpy()]
rate = len(lines) / (time.monotonic() - start)
open(output, "w", encoding="utf-8").write("".join(line + "\\n" for line in outputs))
print(f"Decoded {len(lines)}/{len(lines)} sentences ({rate:.1f} sentences/s).", file=sys.stderr)
"""
# The machine's fields (`machine_facts`), measured once in main and added to every line.
MACHINE: dict[str, Any] = {}
# The table: title, results' key, the median's format ("x": of per-round ratios to LOOP).
COLUMNS = (
    ("sentences/s, decoding", "decoding_sentences_per_s", ".1f"),
    ("decoding / CT2 loop", "decoding_sentences_per_s", "x"),
    ("wall, whole file (s)", "wall_seconds", ".2f"),
    ("wall, short file (s)", "short_wall_seconds", ".2f"),
    ("BLEU", "bleu", ".2f"),
    ("wall / CT2 loop", "wall_seconds", "x"),
    ("short wall / CT2 loop", "short_wall_seconds", "x"),
)


def cache_dirs(work_dir: Path) -> dict[str, str]:
    """Each TensorFlow runtime's XLA cache directory, emptied: the first round pays for
    compiling, the later ones find what a user's second run finds."""
    dirs = {"tensorflow": work_dir / "xla_cache", "saved_model": work_dir / "saved_model_xla_cache"}
    for path in dirs.values():
        shutil.rmtree(path, ignore_errors=True)
    return {runtime: str(path) for runtime, path in dirs.items()}


def runtime_command(
    runtime: str, dirs: dict[str, str], caches: dict[str, str], source: str, output: str
) -> list[str]:
    """The process that decodes `source` into `output` with `runtime`."""
    decoder = [*t2t("t2t-decoder"), f"--decode_from_file={source}", f"--decode_to_file={output}"]
    if runtime == "tensorflow":
        return [*decoder, f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={caches[runtime]}"]
    if runtime == "saved_model":
        model = dirs["saved_model"]
        return [sys.executable, "-c", SERVING_CLIENT, model, source, output, str(FLAGS.batch_size)]
    if runtime in (LOOP, PARALLEL_LOOP):
        loop = [sys.executable, PEER, "translate", dirs["ctranslate2 float32"], source, output]
        return (
            [*loop, f"--workers={len(os.sched_getaffinity(0))}"]
            if runtime == PARALLEL_LOOP
            else loop
        )
    return [*decoder, "--runtime=ctranslate2", f"--ctranslate2_dir={dirs[runtime]}"]


def interactive(dirs: dict[str, str], work_dir: Path) -> list[dict[str, Any]]:
    """Typed-in latency of t2t-decoder: TensorFlow with an empty, then a kept XLA cache; CTranslate2."""
    from t2t_keras.benchmark.latency import typed_line_latencies

    lines = source_lines(FLAGS.source, FLAGS.interactive_lines)
    cache = work_dir / "interactive_xla_cache"
    shutil.rmtree(cache, ignore_errors=True)
    decoder = [*t2t("t2t-decoder"), "--decode_interactive"]
    tensorflow = [*decoder, f"--output_dir={FLAGS.trained_dir}", f"--xla_cache_dir={cache}"]
    runs = {
        "tensorflow, empty XLA cache": tensorflow,
        "tensorflow, XLA cache kept": tensorflow,
        "ctranslate2 float32": [*decoder, "--runtime=ctranslate2", f"--ctranslate2_dir={dirs['ctranslate2 float32']}"],
    }  # fmt: skip
    results = []
    for name, argv in runs.items():
        seconds = typed_line_latencies(argv, lines, xla_cache_environment(""))
        result = {
            "interactive": name,
            "first_line_seconds": round(seconds[0], 3),
            "later_lines_median_seconds": round(statistics.median(seconds[1:]), 3),
            "later_lines_max_seconds": round(max(seconds[1:]), 3),
        }
        emit(result, MACHINE)
        results.append(result)
    return results


def one_round(
    round_index: int, dirs: dict[str, str], caches: dict[str, str], work_dir: Path
) -> list[dict[str, Any]]:
    """Every runtime decodes the whole file, then its first --short_lines, each a process."""
    from t2t_keras.metrics.bleu import sacrebleu_score  # Not in the profile's start-up.

    sentences, references = len(source_lines(FLAGS.source)), source_lines(FLAGS.reference)
    results = []
    for runtime in round_order(FLAGS.runtimes, round_index):
        name = runtime.replace(" ", "_")
        output, short_output = (str(work_dir / f"{name}{part}.out") for part in ("", ".short"))
        env = xla_cache_environment(caches[runtime] if runtime == "saved_model" else "")
        whole, rate = decoding_run(
            runtime_command(runtime, dirs, caches, FLAGS.source, output), env
        )
        short = runtime_command(runtime, dirs, caches, str(work_dir / "short.src"), short_output)
        short_seconds, _ = timed_run(short, env)
        result = {
            "round": round_index,
            "runtime": runtime,
            "sentences": sentences,
            "wall_seconds": round(whole, 2),
            "sentences_per_s": round(sentences / whole, 1),
            "decoding_sentences_per_s": rate,
            "short_wall_seconds": round(short_seconds, 2),
            "bleu": round(sacrebleu_score(source_lines(output), references).score, 2),
        }
        emit(result, MACHINE)
        results.append(result)
    return results


def profile_in_subprocess(work_dir: Path, cache_dir: str, name: str) -> dict[str, Any]:
    """`profile` in a fresh process with the XLA cache `cache_dir`, its wall time added."""
    argv = [sys.executable, __file__, "--profile", f"--trained_dir={FLAGS.trained_dir}"]
    argv += [f"--source={FLAGS.source}", f"--output={work_dir / 'profile.out'}"]
    wall, finished = timed_run(argv, xla_cache_environment(cache_dir))
    profile = json.loads(finished.stdout.strip().splitlines()[-1])
    profile.update(process_wall_seconds=round(wall, 2), cache=name)
    emit(profile, MACHINE)
    return profile


def timed_calls(search: Any) -> list[float]:
    """The seconds of each of the search's compiled calls from now on (the first one
    traces and compiles), the host's work on their results left out."""
    finish, calls = search.finish, []

    def timed_finish(rows: Any, numbers: Any = None) -> Any:
        groups = finish(rows, numbers)
        while True:
            start = time.monotonic()
            group = next(groups, None)
            if group is None:
                return
            calls.append(time.monotonic() - start)
            yield group

    search.finish = timed_finish
    return calls


def profile() -> None:
    """One TensorFlow decode of --source in this process, timed part by part."""
    from t2t_keras import machine

    machine.prepare_tensorflow()  # As t2t-decoder, before TensorFlow loads.
    # TensorFlow loads with these: start-up ends here.
    import t2t_keras.run.loading
    import t2t_keras.serving.file_decoding
    import t2t_keras.serving.translator  # noqa: F401

    imported = time.monotonic()
    translator = load_translator(FLAGS.trained_dir)
    loaded = time.monotonic()
    search = translator.search
    calls = timed_calls(search)
    decode_raw_file(translator, FLAGS.source, FLAGS.output)
    done = time.monotonic()
    first_call, other_calls = (calls[0], calls[1:]) if calls else (0.0, [])
    emit(
        {
            "profile": "tensorflow --xla=full",
            "startup_seconds": round(imported - STARTED, 2),
            "load_seconds": round(loaded - imported, 2),
            "compiled_shapes": search.compilations(),
            "first_calls_seconds": round(first_call, 2),
            "other_search_calls": len(other_calls),
            "other_search_seconds": round(sum(other_calls), 2),
            "rest_seconds": round(done - loaded - sum(calls), 2),
            "decode_seconds": round(done - loaded, 2),
            "busy_slot_steps": round(search.busy_steps / max(search.slot_steps, 1), 4),
            "slot_steps": search.slot_steps,
        }
    )


def runtime_row(runtime: str, results: list[dict[str, Any]]) -> list[str]:
    """One runtime's medians, its ratios to CTranslate2 float32, and its first (cold) round."""
    mine = [r for r in results if r["runtime"] == runtime]
    rounds: dict[int, dict[str, dict[str, Any]]] = {}
    for r in results:
        rounds.setdefault(r["round"], {})[r["runtime"]] = r
    cells = []
    for _, key, form in COLUMNS:
        if form == "x":
            per_round = [{name: r[key] for name, r in found.items()} for found in rounds.values()]
            cells.append(f"{median_ratio(per_round, runtime, LOOP):.2f}x")
        else:
            cells.append(f"{statistics.median(r[key] for r in mine):{form}}")
    first = min(mine, key=lambda r: r["round"])
    return [runtime, *cells, f"{first['wall_seconds']:.2f} / {first['short_wall_seconds']:.2f}"]


def tables(
    results: list[dict[str, Any]], profiles: list[dict[str, Any]], latencies: list[dict[str, Any]]
) -> str:
    """The runtimes' medians and ratios; the profiles (seconds) and typed-line latencies."""
    header = ["runtime", *(title for title, _, _ in COLUMNS), "round 1 wall, whole / short (s)"]
    rows = [markdown_table(header, [runtime_row(runtime, results) for runtime in FLAGS.runtimes])]
    for title, entries in (("t2t-decoder's profiles", profiles), ("Typed lines", latencies)):
        if entries:
            rows += [
                f"\n{title}:\n",
                markdown_table(list(entries[0]), [list(e.values()) for e in entries]),
            ]
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    del argv
    if FLAGS.profile:
        profile()
        return
    if not FLAGS.trained_dir:
        raise app.UsageError("--trained_dir is required: the trained model to decode with.")
    if LOOP not in FLAGS.runtimes or set(FLAGS.runtimes) - set(RUNTIMES):
        raise app.UsageError(f"--runtimes: some of {', '.join(RUNTIMES)}, with {LOOP}.")
    work_dir = Path(FLAGS.work_dir or tempfile.mkdtemp(prefix="decode_files_"))
    work_dir.mkdir(parents=True, exist_ok=True)
    short = source_lines(FLAGS.source, FLAGS.short_lines)
    (work_dir / "short.src").write_text("".join(line + "\n" for line in short), "utf-8")
    MACHINE.update(machine_facts(xla_cache_environment("")))
    formats = {name for name in FLAGS.runtimes if name in EXPORTS} | {"ctranslate2 float32"}
    dirs = export(FLAGS.trained_dir, work_dir, [name for name in EXPORTS if name in formats])
    caches = cache_dirs(work_dir)
    results = []
    for round_index in range(FLAGS.rounds):
        results += one_round(round_index, dirs, caches, work_dir)
    profiles, latencies = [], []
    if "tensorflow" in FLAGS.runtimes:
        profile_cache = work_dir / "profile_xla_cache"
        shutil.rmtree(profile_cache, ignore_errors=True)
        for cache in ("empty", "kept"):
            profiles.append(profile_in_subprocess(work_dir, str(profile_cache), cache))
        if FLAGS.interactive_lines > 1:
            latencies = interactive(dirs, work_dir)
    print(tables(results, profiles, latencies))


if __name__ == "__main__":
    app.run(main)
