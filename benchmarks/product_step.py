r"""How much bfloat16 products can give a model's decoding step: the step alone, three ways.

Times the decoding step of --trained_dir (or of --hparams_set with random
weights) on B sentences x K beams over L cache positions: a loop of L steps
after the inputs' encoding, timed whole and divided by L. Three steps: the
model's, compiled whole by XLA in float32 (the search's step today), and
`ProductDecoding`'s with its products in float32 and in bfloat16. The last two
share one structure, so their difference is what bfloat16 products save a
step; the compiled step less that saving bounds any step whose products run
in bfloat16 and whose other work costs what XLA's does. Medians of --rounds
alternating rounds. Figures: docs/benchmarks.md#decoding-in-bfloat16.

    .venv/bin/python benchmarks/product_step.py --trained_dir=TRAIN/averaged
    .venv/bin/python benchmarks/product_step.py --hparams_set=transformer_base \
        --sentences=32 --beam_size=4 --src_length=30

stdout: one JSON line per round and step kind, then the table (markdown).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from absl import app, flags
from rounds import markdown_table, round_order
from t2t_commands import emit, machine_facts

KINDS = ("compiled float32", "products float32", "products bfloat16")

flags.DEFINE_string("trained_dir", None, "The training directory (or averaged/) whose step.")
flags.DEFINE_string("hparams_set", None, "Without --trained_dir: this set, random weights.")
flags.DEFINE_string("hparams", "", "With --hparams_set: overrides (vocab_size 8,000 if unset).")
flags.DEFINE_integer("sentences", 64, "B: sentences stepped together.", 1)
flags.DEFINE_integer("beam_size", 5, "K: rows per sentence.", 1)
flags.DEFINE_integer("src_length", 24, "Tokens per input.", 2)
flags.DEFINE_integer("positions", 31, "L: cache positions, and steps per loop.", 2)
flags.DEFINE_integer("rounds", 3, "Alternating rounds; each times every kind once.", 1)
flags.register_multi_flags_validator(
    ["trained_dir", "hparams_set"],
    lambda values: bool(values["trained_dir"]) != bool(values["hparams_set"]),
    "Give --trained_dir (a trained model's step) or --hparams_set (random weights), not both.",
)
FLAGS = flags.FLAGS


def _model() -> Any:
    from t2t_keras import catalog, registry
    from t2t_keras.benchmark import with_vocabulary
    from t2t_keras.run.loading import load_trained
    from t2t_keras.run.weights import build_model

    catalog.load()
    if FLAGS.trained_dir:
        return load_trained(FLAGS.trained_dir, use_xla=True).model
    hparams = with_vocabulary(registry.hparams(FLAGS.hparams_set).override(FLAGS.hparams))
    return build_model("transformer", hparams, use_xla=True)


def _step_loop(decoding: Any, jit_compile: bool) -> Any:
    """A function of the inputs running L steps of `decoding` (a fixed id, no reordering)."""
    import tensorflow as tf

    rows, length, beams = FLAGS.sentences * FLAGS.beam_size, FLAGS.positions, FLAGS.beam_size

    def steps(inputs: tf.Tensor) -> tf.Tensor:
        state, step = decoding.start_decoding(inputs, length, beams)
        ids, parents = tf.fill([rows], 5), tf.range(rows)

        def body(i: tf.Tensor, state: Any, total: tf.Tensor) -> tuple:
            logits, state = step(state, i, ids, parents)
            return i + 1, state, total + logits[0, 0]

        return tf.while_loop(lambda i, *_: i < length, body, (0, state, 0.0))[2]

    return tf.function(steps, jit_compile=jit_compile, autograph=False)


def _ms_per_step(loop: Any, inputs: Any) -> float:
    start = time.perf_counter()
    loop(inputs).numpy()
    return (time.perf_counter() - start) / FLAGS.positions * 1e3


def main(argv: list[str]) -> None:
    del argv
    import tensorflow as tf

    from t2t_keras.models.product_step import ProductDecoding

    model = _model()
    loops = {
        KINDS[0]: _step_loop(model, True),
        KINDS[1]: _step_loop(ProductDecoding(model, tf.float32), False),
        KINDS[2]: _step_loop(ProductDecoding(model, tf.bfloat16), False),
    }
    shape = [FLAGS.sentences, FLAGS.src_length]
    highest = min(1000, model.hparams.vocab_size)
    inputs = tf.random.uniform(shape, 3, highest, tf.int32, seed=1)
    for loop in loops.values():
        loop(inputs).numpy()  # Compiles.
    machine = machine_facts()
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for index in range(FLAGS.rounds):
        for kind in round_order(KINDS, index):
            times[kind].append(_ms_per_step(loops[kind], inputs))
            emit({"round": index, "step": kind, "ms_per_step": times[kind][-1]}, machine)
    median = {kind: statistics.median(values) for kind, values in times.items()}
    saving = median[KINDS[1]] - median[KINDS[2]]
    bound = median[KINDS[0]] / max(median[KINDS[0]] - saving, 1e-9)
    rows = [[kind, f"{median[kind]:.2f}"] for kind in KINDS]
    rows.append(["bfloat16 products' saving", f"{saving:.2f}"])
    rows.append(["bound on bfloat16's speed-up of the compiled step", f"{bound:.2f}x"])
    print(markdown_table(["step", "ms"], rows))


if __name__ == "__main__":
    app.run(main)
