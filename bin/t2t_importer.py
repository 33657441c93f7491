"""t2t-importer: a pretrained model of another framework as a training directory.

t2t-importer --from=marian --model_dir=opus-mt-en-de --output_dir=TRAIN

The reverse of t2t-exporter. --model_dir is a Hugging Face Marian (OPUS-MT)
directory as `huggingface-cli download Helsinki-NLP/opus-mt-en-de` leaves it:
config.json, model.safetensors (or pytorch_model.bin, read only with PyTorch
installed), source.spm, target.spm, vocab.json (and target_vocab.json when
the sides have their own). --output_dir becomes an ordinary training
directory (run files, hparams, a SentencePiece model a side rewritten into
our ids, one checkpoint) that t2t-decoder, t2t-server, t2t-exporter,
t2t-score and t2t-trainer --warm_start_from take unchanged; it must be new or
empty, and it is written aside and renamed, so a failed import leaves
nothing. The model's decoding defaults (beam, length penalty) come with it.
"""

from __future__ import annotations

from absl import flags

from t2t_keras import modes
from t2t_keras.bin import flag_groups, program

flag_groups.define_registry_flags()
flags.DEFINE_enum("from", None, ["marian"], "The framework the model comes from.")
flags.DEFINE_string("model_dir", None, "The directory of the model to import.")
flags.DEFINE_string("output_dir", None, "The training directory to write (new or empty).")
flags.DEFINE_enum(
    "decoder_start",
    "pad",
    list(modes.DECODER_STARTS),
    "How the decoder starts: pad, from the pad row's embedding, as Hugging Face's generate "
    "does; zero, from none, as CTranslate2's converter does (the same where the pad row is "
    "zero, as in OPUS-MT's published models).",
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    flag_groups.required("from", "the framework the model comes from: marian")
    model_dir = flag_groups.required(
        "model_dir", "a Marian directory, as huggingface-cli download leaves it"
    )
    output_dir = flag_groups.required("output_dir", "the new training directory to write")
    from t2t_keras.importing.training_dir import import_marian

    checkpoint = import_marian(model_dir, output_dir, FLAGS.decoder_start)
    print(checkpoint)
    print(
        f"Translate with: t2t-decoder --output_dir={output_dir} --decode_from_file=IN "
        "--decode_to_file=OUT"
    )
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main)


if __name__ == "__main__":
    run()
