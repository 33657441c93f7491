"""t2t-exporter: writes a SavedModel that translates strings, for TF Serving.

t2t-exporter --output_dir=TRAIN [--export_dir=TRAIN/export]
             [--decode_hparams="beam_size=4,alpha=0.6,extra_length=50"]

Exports the newest checkpoint of --output_dir (or --checkpoint_path) into a
new version directory --export_dir/<Unix time>; an existing version is never
replaced. The SavedModel's serving_default signature takes `inputs`, a batch
of strings, and returns `outputs` (the translations) and `scores`; the
tokenizer and the XLA-compiled beam search are inside it, so serving needs
TensorFlow and tensorflow_text only.
"""

from __future__ import annotations

import os

from absl import flags

from t2t_keras.bin import common
from t2t_keras.decoding.decode_hparams import SEARCH_SETTINGS, DecodeHParams
from t2t_keras.decoding.export import export_translator
from t2t_keras.errors import UserError
from t2t_keras.run.loading import load_trained

common.define_flags(with_model=False)
common.define_checkpoint_flags()
flags.DEFINE_string(
    "export_dir", None, "Directory of the exported versions; default: <output_dir>/export."
)
flags.DEFINE_string(
    "decode_hparams",
    "",
    "Search settings of the exported model, comma-separated name=value among beam_size, "
    "alpha, extra_length (default: the hparams set's), min_length (1), stopping (first_k or "
    "best_possible) and return_beams (outputs and scores [B, beam_size], best first).",
)
FLAGS = flags.FLAGS

_EXPORTED = SEARCH_SETTINGS


def _search_settings() -> DecodeHParams:
    """--decode_hparams, refusing the settings that only t2t-decoder's file decoding has."""
    settings = DecodeHParams().override(FLAGS.decode_hparams)
    others = [
        name
        for name, value in settings.values().items()
        if name not in _EXPORTED and value != getattr(DecodeHParams(), name)
    ]
    if others:
        raise UserError(
            f"--decode_hparams sets {', '.join(others)}, which an exported model does not "
            f"have; it takes {', '.join(_EXPORTED)}."
        )
    return settings


def main() -> int:
    if common.start():
        return 0
    settings = _search_settings()
    if not FLAGS.output_dir and not FLAGS.checkpoint_path:
        common.required("output_dir", "the training directory whose checkpoint is exported")
    trained = load_trained(FLAGS.output_dir, FLAGS.checkpoint_path)
    export_dir = FLAGS.export_dir or os.path.join(trained.run_dir, "export")
    version_dir = export_translator(trained, export_dir, settings)
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
