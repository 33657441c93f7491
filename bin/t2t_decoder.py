r"""t2t-decoder: translates with a trained model and scores the translations.

    t2t-decoder --output_dir=TRAIN --decode_from_file=IN --decode_to_file=OUT \
        [--decode_reference=REF] [--decode_hparams="beam_size=4,alpha=0.6"]
    t2t-decoder --output_dir=TRAIN                 # the problem's test split, scored
    t2t-decoder --output_dir=TRAIN --decode_interactive
    t2t-decoder --runtime=ctranslate2 --ctranslate2_dir=TRAIN/ctranslate2 \
        --decode_from_file=IN --decode_to_file=OUT

--output_dir is what t2t-trainer wrote (hparams.json, run.json, vocabularies,
checkpoints); its newest checkpoint is used unless --checkpoint_path names
one. tensor2tensor's --problem, --model, --hparams_set, --hparams and
--data_dir are accepted and checked against what the model was trained with.
Output has exactly one line per input line, in input order; empty input
lines give empty output lines. Input must be UTF-8: invalid bytes are an
error naming the line. Inputs longer than the model's max_length are cut to
it (the count is logged). For parsing problems the search writes only
well-formed trees over the input's words (unless --decode_hparams sets
tree_constraint=false; the CTranslate2 runtime cannot, and says so), each
output line is a PTB tree over exactly the input's words, repaired if the
model's output was not one (`t2t_keras.data.tree_repair`; repairs are counted
in the log), and scores are EVALB's against gold trees.
--decode_hparams=sampling=true draws outputs from the model's distribution
instead of searching (temperature, top_k, top_p, seed; samples_per_input of
each line, tab-separated like return_beams): the same file, settings and
seed give the same samples.

--runtime=ctranslate2 decodes the same way with a CTranslate2 export
(t2t-exporter --export_format=ctranslate2), which needs neither the training
directory nor TensorFlow's search: --ctranslate2_dir is enough (with
--output_dir too, the export must be of that training).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from absl import flags

from t2t_keras.bin import flag_groups, program, runtimes, trained_model
from t2t_keras.errors import UserError
from t2t_keras.files import make_writable_dir
from t2t_keras.search.settings import DecodeHParams

if TYPE_CHECKING:
    from t2t_keras.run.loading import TrainedModel
    from t2t_keras.serving.file_decoding import Decoded
    from t2t_keras.serving.translator import SentenceTranslator, Translator

trained_model.define_flags(
    "The problem's data directory: the split is read from it (default: the data_dir of the "
    "training). If given, it must hold the vocabularies the model was trained with."
)
flag_groups.define_xla_cache_flag()
runtimes.define_flags()
flags.DEFINE_string(
    "decode_hparams",
    "",
    "Comma-separated name=value decoding settings. Fields:\n" + DecodeHParams.help_text(),
)
flags.DEFINE_string("decode_from_file", None, "Translate this UTF-8 file, one sentence a line.")
flags.DEFINE_string(
    "decode_to_file",
    None,
    "Write the outputs here (default with --decode_from_file: "
    "IN.<hparams_set>.beam<K>.alpha<A>.decodes beside it; sampling: "
    "IN.<hparams_set>.sample<R>.temperature<T>.top_k<K>.top_p<P>.seed<S>.decodes).",
)
flags.DEFINE_string(
    "decode_reference",
    None,
    "References of --decode_from_file, one a line: print sacreBLEU and its signature, or "
    "for parsing problems EVALB's bracket scores against these gold PTB trees.",
)
flags.DEFINE_bool("decode_interactive", False, "Translate lines typed on stdin until EOF.")
flags.DEFINE_string(
    "decode_split", "test", "Without --decode_from_file: the split of the problem to decode."
)
flags.DEFINE_bool(
    "keep_timestamp",
    False,
    "Give the output file the modification time of the checkpoint decoded with.",
)
flags.DEFINE_string(
    "attention_plot_dir", None, "Write attention heat maps (PNG) and index.html here."
)
flags.DEFINE_integer(
    "attention_plot_sentences", 3, "Sentences to plot (the first ones decoded).", lower_bound=1
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    _check_modes()
    settings = trained_model.decode_settings()
    if FLAGS.attention_plot_dir:  # Found unwritable now, not after the whole decode.
        make_writable_dir(FLAGS.attention_plot_dir, "--attention_plot_dir")
    plotted: tuple[TrainedModel, Translator] | None = None  # The TensorFlow runtime's.
    translator: SentenceTranslator
    if FLAGS.runtime == "ctranslate2":
        translator, run, stamp = runtimes.ctranslate2_translator(settings)
    else:
        trained = trained_model.load(ensemble=True)
        searched = runtimes.tensorflow_translator(trained, settings.resolve(trained.hparams))
        translator, run, stamp = searched, trained.run, f"{trained.checkpoint}.index"
        plotted = (trained, searched)
    from t2t_keras.serving import file_decoding

    problem = trained_model.registered_problem(run)
    if FLAGS.decode_interactive:
        file_decoding.decode_interactive(translator, problem=problem)
        return 0
    if FLAGS.decode_from_file:
        to_file = FLAGS.decode_to_file or _default_output(translator, run.get("hparams_set"))
        decoded = file_decoding.decode_file(
            translator, FLAGS.decode_from_file, to_file, FLAGS.decode_reference, problem
        )
    else:
        to_file = FLAGS.decode_to_file
        decoded = _decode_split(run, translator)
    if FLAGS.keep_timestamp and to_file:
        stamp_time = os.path.getmtime(stamp)
        os.utime(os.path.expanduser(to_file), (stamp_time, stamp_time))
    if FLAGS.attention_plot_dir and plotted:
        file_decoding.plot_attention(
            *plotted, decoded, FLAGS.attention_plot_dir, FLAGS.attention_plot_sentences
        )
    return 0


def _check_modes() -> None:
    """Refuses flags that contradict each other, before anything is loaded."""
    if FLAGS.decode_interactive and FLAGS.decode_from_file:
        raise UserError("give either --decode_from_file or --decode_interactive, not both.")
    if FLAGS.decode_reference and not FLAGS.decode_from_file:
        raise UserError("--decode_reference scores --decode_from_file; give that file too.")
    if FLAGS.decode_interactive and (FLAGS.decode_to_file or FLAGS.attention_plot_dir):
        raise UserError(
            "--decode_interactive prints its outputs as it goes; drop --decode_to_file and "
            "--attention_plot_dir, or decode a file with --decode_from_file."
        )
    if trained_model.ensemble_members() and (
        FLAGS.runtime == "ctranslate2" or FLAGS.attention_plot_dir
    ):
        raise UserError(
            f"--output_dir={FLAGS.output_dir} names an ensemble, which decodes with "
            "--runtime=tensorflow and plots no attention; drop --runtime=ctranslate2 and "
            "--attention_plot_dir, or give one model."
        )
    if FLAGS.runtime == "ctranslate2" and FLAGS.attention_plot_dir:
        raise UserError(
            "--attention_plot_dir plots the TensorFlow model's attention; drop it, or decode "
            "with --runtime=tensorflow."
        )
    runtimes.check_flags()
    if FLAGS.keep_timestamp and not (FLAGS.decode_to_file or FLAGS.decode_from_file):
        raise UserError(
            "--keep_timestamp dates the output file, and there is none; give "
            "--decode_from_file or --decode_to_file, or drop --keep_timestamp."
        )


def _decode_split(run: dict[str, Any], translator: SentenceTranslator) -> Decoded:
    from t2t_keras.serving import file_decoding

    problem = trained_model.registered_problem(run)
    if problem is None:
        raise UserError(
            f"problem {run['problem']!r} of the training is not registered; "
            "pass its --t2t_usr_dir, or decode a file with --decode_from_file."
        )
    data_dir = FLAGS.data_dir or run.get("data_dir")
    if not data_dir:
        raise UserError(
            "the training's run.json names no data_dir; give --data_dir, the directory "
            "t2t-datagen wrote the problem's shards to, or decode a file with --decode_from_file."
        )
    data_dir = os.path.expanduser(data_dir)
    return file_decoding.decode_split(
        translator, problem, data_dir, FLAGS.decode_split, FLAGS.decode_to_file
    )


def _default_output(translator: SentenceTranslator, hparams_set: str | None) -> str:
    h = translator.settings.search
    name = hparams_set or "model"
    search = f"beam{h.beam_size}.alpha{h.alpha}"
    if h.sampling:  # Never the file of a search, nor of other samples.
        search = (
            f"sample{h.samples_per_input}.temperature{h.temperature}.top_k{h.top_k}"
            f".top_p{h.top_p}.seed{h.seed}"
        )
    return f"{FLAGS.decode_from_file}.{name}.{search}.decodes"


def run() -> None:
    """Console entry point."""
    program.run(main, before_devices=flag_groups.keep_compilations)


if __name__ == "__main__":
    run()
