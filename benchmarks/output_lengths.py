"""Why outputs come out short, on files: t2t_keras.metrics.output_lengths.

    .venv/bin/python benchmarks/output_lengths.py --run_dir=TRAIN --source=val.en \
        --reference=val.de [--decodes=val.decodes]

One JSON line, with the machine. Figures: docs/benchmarks.md#why-outputs-come-out-short.
"""

from __future__ import annotations

from t2t_keras import machine

machine.prepare_tensorflow()  # Before anything loads TensorFlow.

import json  # noqa: E402

from absl import app, flags  # noqa: E402

from t2t_keras import catalog  # noqa: E402
from t2t_keras.benchmark import host, measure  # noqa: E402
from t2t_keras.errors import UserError  # noqa: E402
from t2t_keras.files import read_text_lines  # noqa: E402
from t2t_keras.metrics.output_lengths import diagnose  # noqa: E402
from t2t_keras.run.loading import load_trained  # noqa: E402

flags.DEFINE_string("run_dir", None, "The training directory (or its averaged/).", required=True)
flags.DEFINE_string("source", None, "Raw source file, one sentence a line.", required=True)
flags.DEFINE_string("reference", None, "Raw reference file, line by line.", required=True)
flags.DEFINE_string("decodes", None, "The model's outputs for --source, line by line.")
FLAGS = flags.FLAGS


def main(argv: list[str]) -> None:
    del argv
    catalog.load()
    try:
        sources = read_text_lines(FLAGS.source, "--source")
        references = read_text_lines(FLAGS.reference, "--reference")
        outputs = read_text_lines(FLAGS.decodes, "--decodes") if FLAGS.decodes else None
    except UserError as error:
        raise SystemExit(str(error)) from None
    if len(sources) != len(references) or (outputs is not None and len(outputs) != len(sources)):
        raise SystemExit(
            f"--source has {len(sources)} lines, --reference {len(references)}"
            + (f", --decodes {len(outputs)}" if outputs is not None else "")
            + ": the files must hold the same sentences, one a line."
        )
    trained = load_trained(FLAGS.run_dir, use_xla=False)
    diagnosis = diagnose(trained.model, trained.vocabs, sources, references, outputs)
    print(json.dumps({**diagnosis, **host.describe(measure.matmul("off")["flops_per_s"])}))


if __name__ == "__main__":
    app.run(main)
