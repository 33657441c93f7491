"""t2t-exporter: writes a SavedModel that translates strings, for TF Serving.

t2t-exporter --output_dir=TRAIN [--export_dir=TRAIN/export]
             [--decode_hparams="beam_size=4,alpha=0.6,extra_length=50"]

Exports the newest checkpoint of --output_dir (or --checkpoint_path) into a
new version directory --export_dir/<Unix time>; an existing version is never
replaced. The SavedModel's serving_default signature takes `inputs`, a batch
of strings, and returns `outputs` (the translations) and `scores`; the
tokenizer and the beam search are inside it, so serving needs TensorFlow and
tensorflow_text only. tensor2tensor's --problem, --model, --hparams_set,
--hparams and --data_dir are accepted and checked against what the model was
trained with.
"""

from __future__ import annotations

import os

from absl import flags

from t2t_keras.bin import common, trained_model
from t2t_keras.decoding.decode_hparams import SEARCH_SETTINGS, DecodeHParams

trained_model.define_flags(
    "If given, it must hold the vocabularies the model was trained with (checked); the "
    "export itself uses their copies in the training directory."
)
flags.DEFINE_string(
    "export_dir", None, "Directory of the exported versions; default: <output_dir>/export."
)
flags.DEFINE_string(
    "decode_hparams",
    "",
    "Search settings of the exported model, comma-separated name=value (unset ones: the "
    "hparams set's); with return_beams, outputs and scores are [B, beam_size], best first:\n"
    + "\n".join(
        line
        for line in DecodeHParams.help_text().splitlines()
        if line.split()[0] in SEARCH_SETTINGS
    ),
)
FLAGS = flags.FLAGS


def main() -> int:
    if common.start():
        return 0
    from t2t_keras.decoding.export import check_exportable, export_translator

    settings = trained_model.decode_settings()
    check_exportable(settings)
    if not FLAGS.output_dir and not FLAGS.checkpoint_path:
        common.required("output_dir", "the training directory whose checkpoint is exported")
    trained = trained_model.load()
    export_dir = FLAGS.export_dir or os.path.join(trained.run_dir, "export")
    _, jit_compile = common.xla_arguments()
    version_dir = export_translator(
        trained, export_dir, settings.resolved(trained.hparams), jit_compile
    )
    print(version_dir)
    print(
        "Load it with (tensorflow_text registers the tokenizer ops): import tensorflow as tf, "
        f'tensorflow_text; tf.saved_model.load("{version_dir}").signatures["serving_default"]'
        '(inputs=tf.constant(["a sentence"]))["outputs"]'
    )
    return 0


def run() -> None:
    """Console entry point."""
    common.run(main)


if __name__ == "__main__":
    run()
