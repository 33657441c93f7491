"""t2t-exporter: writes a SavedModel for TF Serving, or a CTranslate2 model.

t2t-exporter --output_dir=TRAIN [--export_dir=TRAIN/export]
             [--decode_hparams="beam_size=4,alpha=0.6,extra_length=50"]
t2t-exporter --output_dir=TRAIN --export_format=ctranslate2 [--quantization=int8]
             [--export_dir=TRAIN/ctranslate2]

Exports the newest checkpoint of --output_dir (or --checkpoint_path).

SavedModel (the default): a new version directory --export_dir/<Unix time>;
an existing version is never replaced. Its serving_default signature takes
`inputs`, a batch of strings, and returns `outputs` (the translations) and
`scores`; the tokenizer and the beam search are inside it, so serving needs
TensorFlow and tensorflow_text only. A parser's outputs are the PTB trees
t2t-decoder writes (its search constrained to trees, the trees built in the
graph); a parser with --decode_hparams=tree_constraint=false is refused.
A request is searched at a few shapes, each compiled once by XLA; the
version's assets.extra/tf_serving_warmup_requests holds a request for each,
which TF Serving replays when it loads the version, so that the first
requests are served at full speed (a client loading the SavedModel itself:
t2t_keras.export.warmup.replay_warmup).

CTranslate2: the model directory `ctranslate2.Translator` loads, with the
SentencePiece model(s) and t2t_keras.json (problem, hparams, the search
defaults of --decode_hparams) beside it; decode it with t2t-decoder
--runtime=ctranslate2. It is written under a temporary name and renamed; an
earlier export in --export_dir is replaced only once the new one is
complete. Needs the ctranslate2 package: pip install 't2t_keras[ctranslate2]'.

tensor2tensor's --problem, --model, --hparams_set, --hparams and --data_dir
are accepted and checked against what the model was trained with.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from absl import flags

from t2t_keras.bin import flag_groups, program, trained_model
from t2t_keras.errors import UserError
from t2t_keras.search.settings import SEARCH_SETTINGS, DecodeHParams

if TYPE_CHECKING:
    from t2t_keras.run.loading import TrainedModel

trained_model.define_flags(
    "If given, it must hold the vocabularies the model was trained with (checked); the "
    "export itself uses their copies in the training directory."
)
flags.DEFINE_enum(
    "export_format",
    "saved_model",
    ["saved_model", "ctranslate2"],
    "saved_model: a TF Serving SavedModel; ctranslate2: a CTranslate2 model directory.",
)
flags.DEFINE_string(
    "export_dir",
    None,
    "saved_model: the directory of versions (default <output_dir>/export); ctranslate2: the "
    "model directory (default <output_dir>/ctranslate2, or ctranslate2_<quantization>).",
)
flags.DEFINE_string(
    "quantization",
    None,
    "ctranslate2 only: the weights' type, one of float32 (default: as trained), int8, "
    "int8_float32, int8_float16, int8_bfloat16, int16, float16, bfloat16.",
)
flags.DEFINE_string(
    "decode_hparams",
    "",
    "Search settings of the exported model, comma-separated name=value (unset ones: the "
    "hparams set's); with return_beams, outputs and scores are [B, beam_size], best first, "
    "and with sampling=true [B, samples_per_input] when that is more than 1, drawn with the "
    "seed given here:\n"
    + "\n".join(
        line
        for line in DecodeHParams.help_text().splitlines()
        if line.split()[0] in SEARCH_SETTINGS
    ),
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    settings = trained_model.decode_settings()
    settings.check_search_only()
    if FLAGS.export_format == "ctranslate2":
        return _export_ctranslate2(settings)
    if FLAGS.quantization:
        raise UserError(
            "--quantization applies to --export_format=ctranslate2; a SavedModel keeps the "
            "trained weights. Drop --quantization or add --export_format=ctranslate2."
        )
    from t2t_keras.export.saved_model import export_translator

    trained = _load()
    export_dir = FLAGS.export_dir or os.path.join(trained.run_dir, "export")
    jit_compile = flag_groups.xla().compiles_whole_search
    version_dir = export_translator(
        trained,
        export_dir,
        settings.resolve(trained.hparams).search,
        jit_compile,
        trained_model.tree_tokens(trained.run, trained.vocabs),
    )
    print(version_dir)
    print(
        "Load it with (tensorflow_text registers the tokenizer ops): import tensorflow as tf, "
        f'tensorflow_text; tf.saved_model.load("{version_dir}").signatures["serving_default"]'
        '(inputs=tf.constant(["a sentence"]))["outputs"]'
    )
    print(
        "TF Serving compiles its searches when it loads it (the warmup requests of "
        "assets.extra); a client of its own: t2t_keras.export.warmup.replay_warmup"
        f'("{version_dir}", signature)'
    )
    return 0


def _load() -> TrainedModel:
    if not FLAGS.output_dir and not FLAGS.checkpoint_path:
        flag_groups.required("output_dir", "the training directory whose checkpoint is exported")
    return trained_model.load()


def _export_ctranslate2(settings: DecodeHParams) -> int:
    from t2t_keras.export.ctranslate2_export import (
        check_quantization,
        export_ctranslate2,
        import_ctranslate2,
    )

    if settings.sampling:
        raise UserError(
            "--decode_hparams sets sampling=true, but a CTranslate2 export keeps only the "
            "search defaults (beam_size, alpha, extra_length); sample when decoding it, with "
            "t2t-decoder --runtime=ctranslate2 --decode_hparams=sampling=true,..."
        )
    quantization = FLAGS.quantization or "float32"
    check_quantization(quantization)  # Before the model is loaded.
    import_ctranslate2()
    trained = _load()
    suffix = "" if quantization == "float32" else f"_{quantization}"
    export_dir = FLAGS.export_dir or os.path.join(trained.run_dir, f"ctranslate2{suffix}")
    search = settings.resolve(trained.hparams).search
    model_dir = export_ctranslate2(trained, export_dir, search, quantization)
    print(model_dir)
    print(
        f"Decode with: t2t-decoder --runtime=ctranslate2 --ctranslate2_dir={model_dir} "
        "--decode_from_file=IN --decode_to_file=OUT"
    )
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main)


if __name__ == "__main__":
    run()
