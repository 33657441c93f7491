"""t2t-bleu: scores a translation file against a reference file with BLEU.

t2t-bleu --translation=FILE --reference=FILE [--language=de]

Both files are UTF-8 text, one detokenized sentence a line, in the same order.
Prints three labelled numbers, one a line: sacreBLEU (cased, detokenized, 13a:
the comparable number, with its signature), the paper's convention
(Moses-tokenized, compounds split with ##AT##, multi-bleu) and uncased
sacreBLEU.
"""

from __future__ import annotations

from absl import flags

from t2t_keras.bin import flag_groups, program
from t2t_keras.files import read_text_lines

flags.DEFINE_string("translation", None, "The system's output: one translated sentence a line.")
flags.DEFINE_string("reference", None, "The reference translations, aligned line by line.")
flags.DEFINE_string(
    "language",
    "en",
    "Language of the texts, for the Moses tokenizer of the paper's convention only "
    "(tokenizer.perl's -l, e.g. de for English-German). sacreBLEU's numbers do not "
    "depend on it.",
)
FLAGS = flags.FLAGS


def main() -> int:
    from t2t_keras.metrics import bleu

    translation = flag_groups.required("translation", "the file of translated sentences")
    reference = flag_groups.required("reference", "the file of reference sentences")
    hypotheses = read_text_lines(translation, "--translation")
    references = read_text_lines(reference, "--reference")
    for score in bleu.bleu_scores(hypotheses, references, FLAGS.language):
        print(score)
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main, uses_tensorflow=False)


if __name__ == "__main__":
    run()
