r"""Where the search's time goes: each XLA operation of the compiled search, timed.

Profiles --rounds translations of --source as t2t-decoder does (or with
--fixed_shapes, the search t2t-benchmark --mode=decode times): JSON lines
per round, per operation kind and per --top operation, then their table.
Figures: docs/benchmarks.md#where-the-searchs-time-goes.

    .venv/bin/python benchmarks/search_profile.py --trained_dir=TRAIN/averaged
    .venv/bin/python benchmarks/search_profile.py --fixed_shapes  # transformer_base, beam 4, 32 x 30
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from absl import app, flags, logging
from rounds import markdown_table
from t2t_commands import emit, machine_facts
from trained_model import TEST_SOURCE, load_translator, source_lines, xla_cache_environment

# The compiled functions' names, which their modules' names hold: the slot search's
# (`SlotLoop.compiled`) and the batch search's of --fixed_shapes (`Decoder`).
SLOT_SEARCH_FUNCTION = "run"
BATCH_SEARCH_FUNCTION = "_search_ids"
# Each operation's kind, by the start of its opcode.
KINDS = (("dot", "matrix products"), ("fusion", "fused loops"), ("copy", "copies"),
         *((opcode, "scatters and gathers") for opcode in
           ("scatter", "gather", "dynamic-update-slice", "dynamic-slice")))  # fmt: skip

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) to decode with.")
flags.DEFINE_bool("fixed_shapes", False, "Profile t2t-benchmark --mode=decode's search instead.")
flags.DEFINE_string("hparams_set", "transformer_base", "--fixed_shapes: the model's hparams set.")
flags.DEFINE_integer("beam_size", 4, "--fixed_shapes: hypotheses per sentence.", 1)
flags.DEFINE_integer("decode_batch", 32, "--fixed_shapes: sentences searched together.", 1)
flags.DEFINE_integer("src_length", 30, "--fixed_shapes: tokens per input, EOS included.", 2)
flags.DEFINE_integer("fixed_output_length", 30, "--fixed_shapes: tokens of every output.", 1)
flags.DEFINE_string("source", TEST_SOURCE, "Raw source, one a line.")
flags.DEFINE_integer("lines", 0, "Decode only the file's first N lines; 0 = all.")
flags.DEFINE_integer("rounds", 2, "Profiled translations of the file, after the compiling one.")
flags.DEFINE_integer("top", 25, "Operations listed, the costliest first.")
flags.DEFINE_string(
    "decode_hparams", "", "As t2t-decoder's --decode_hparams, e.g. beam_size=4,batch_size=32."
)
flags.register_multi_flags_validator(
    ["trained_dir", "fixed_shapes"],
    lambda values: bool(values["trained_dir"]) != values["fixed_shapes"],
    "Give --trained_dir (a real file's decoding) or --fixed_shapes (t2t-benchmark's), not both.",
)
FLAGS = flags.FLAGS


def hlo_operations(dump_dir: Path, function: str) -> dict[str, dict[str, str]]:
    """Each instruction of the search's optimized module: {name: {shape, opcode, op}}."""
    dumped = dump_dir.glob("*after_optimizations.txt")
    modules = [path for path in dumped if f"_inference_{function}_" in path.name]
    if not modules:
        raise SystemExit(f"XLA dumped no module of the search into {dump_dir}.")
    operations = {}
    pattern = re.compile(r"\s*(?:ROOT )?%?([\w.\-]+) = (\S+) ([\w\-]+)\(")
    for line in max(modules, key=lambda path: path.stat().st_mtime).read_text().splitlines():
        if found := pattern.match(line):
            name, shape, opcode = found.groups()
            op = re.search(r'op_name="([^"]+)"', line)
            operations[name] = {"shape": shape, "opcode": opcode, "op": op.group(1) if op else ""}
    return operations


def operation_seconds(profile_dir: Path, operations: set[str]) -> tuple[Counter, Counter]:
    """Seconds and executions of each of the search's compiled `operations`, from the
    profiler's trace (whose other events are whole calls, or XLA's executor)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    seconds, counts = Counter(), Counter()
    for path in profile_dir.glob("**/*.xplane.pb"):
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    if name in operations:
                        seconds[name] += event.duration_ps / 1e12
                        counts[name] += 1
    return seconds, counts


def profiled_rounds(call: Callable[[], dict], sentences: int, profile_dir: Path) -> list[dict]:
    """One call that compiles, then --rounds under TensorFlow's profiler: each round's
    sentences/s and what its call returns."""
    import tensorflow as tf

    call()
    rounds = []
    tf.profiler.experimental.start(str(profile_dir))
    for number in range(1, FLAGS.rounds + 1):
        started = time.monotonic()
        facts = call()
        rate = round(sentences / (time.monotonic() - started), 1)
        rounds.append({"round": number, "sentences_per_s": rate, **facts})
    tf.profiler.experimental.stop()
    return rounds


def file_rounds(profile_dir: Path) -> list[dict[str, Any]]:
    """The file translated as t2t-decoder does (--xla=full), profiled: its slot steps and shapes."""
    lines = source_lines(FLAGS.source, FLAGS.lines)
    translator = load_translator(FLAGS.trained_dir, FLAGS.decode_hparams)
    search = translator.search

    def translate() -> dict[str, Any]:
        before = search.slot_steps
        list(translator.translate(lines))
        slot_steps, shapes = search.slot_steps - before, search.searched_shapes()
        # A step advances the N slots of the widest shape (N, S, L) one position.
        steps = slot_steps / max(shape[0] for shape in shapes)
        return {"slot_steps": slot_steps, "shapes": shapes, "steps": steps}

    return profiled_rounds(translate, len(lines), profile_dir)


def fixed_shape_rounds(profile_dir: Path) -> list[dict[str, Any]]:
    """t2t-benchmark's search of one random batch, profiled."""
    from t2t_keras import catalog, registry
    from t2t_keras.benchmark import with_vocabulary
    from t2t_keras.benchmark.measure import fixed_length_decoder, random_ids

    catalog.load()
    hparams = with_vocabulary(registry.hparams(FLAGS.hparams_set))
    decoder = fixed_length_decoder(
        hparams, "full", "off", FLAGS.beam_size, FLAGS.src_length, FLAGS.fixed_output_length
    )
    inputs = random_ids(FLAGS.decode_batch, FLAGS.src_length, hparams.vocab_size, seed=3)

    def search() -> dict[str, Any]:
        decoder(inputs)[0].numpy()
        # Every output position, and the EOS after the last.
        return {"steps": FLAGS.fixed_output_length + 1}

    return profiled_rounds(search, FLAGS.decode_batch, profile_dir)


def report(rounds: list[dict[str, Any]], work: Path, machine: dict[str, Any]) -> None:
    """Prints each operation kind's time per step, then the --top operations'."""
    steps = sum(line["steps"] for line in rounds)  # Output positions, or slot steps.
    function = BATCH_SEARCH_FUNCTION if FLAGS.fixed_shapes else SLOT_SEARCH_FUNCTION
    operations = hlo_operations(work / "hlo", function)
    seconds, counts = operation_seconds(work / "profile", set(operations))
    total = sum(seconds.values())
    by_kind: Counter = Counter()
    for name, spent in seconds.items():
        opcode = operations[name]["opcode"]
        by_kind[next((kind for start, kind in KINDS if opcode.startswith(start)), "the rest")] += (
            spent
        )
    for kind, spent in by_kind.most_common():
        line = {"kind": kind, "ms_per_step": round(1e3 * spent / steps, 3)}
        emit({**line, "share": round(spent / total, 3)}, machine)
    rows = []
    for name, spent in seconds.most_common(FLAGS.top):
        row = {
            "operation": name,
            "ms_per_step": round(1e3 * spent / steps, 3),
            "share": round(spent / total, 3),
            "runs_per_step": round(counts[name] / steps, 2),
            "shape": operations[name]["shape"],
            "tensorflow_op": operations[name]["op"],
        }
        emit(row, machine)
        rows.append(list(row.values()))
    unit = "steps" if FLAGS.fixed_shapes else "slot steps"
    print(f"\n{total:.2f} s in compiled operations over {steps:.0f} {unit}.\n")
    print(markdown_table(["operation", "ms/step", "share", "runs/step", "shape", "TF op"], rows))


def main(argv: list[str]) -> None:
    del argv
    work = Path(tempfile.mkdtemp(prefix="search_profile_"))
    logging.info("The search's HLO and profile go to %s.", work)
    # Before TensorFlow loads: dump the search's compilation; compile it here, not from a cache.
    os.environ["XLA_FLAGS"] = (
        f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={work / 'hlo'} --xla_dump_hlo_as_text"
    ).strip()
    os.environ["TF_XLA_FLAGS"] = xla_cache_environment("")["TF_XLA_FLAGS"]
    from t2t_keras.machine import prepare_tensorflow

    prepare_tensorflow()
    machine = machine_facts()
    rounds = (fixed_shape_rounds if FLAGS.fixed_shapes else file_rounds)(work / "profile")
    for line in rounds:
        emit(line, machine)
    report(rounds, work, machine)


if __name__ == "__main__":
    app.run(main)
