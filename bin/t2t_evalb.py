"""t2t-evalb: labeled bracket F1 of parse trees, by EVALB's rules with COLLINS.prm.

t2t-evalb --gold=GOLD_TREES --test=TEST_TREES [--sentences]

Both files hold one PTB-bracketed tree a line, in the same order. Prints what
the EVALB program prints with COLLINS.prm, line for line: its summary for all
sentences and for those of at most 40 words (sentences, error and skipped
sentences, bracketing recall, precision and F-measure, complete match,
crossing brackets, tagging accuracy), and with --sentences first its table of
one row per sentence (`t2t_keras/metrics/evalb.py` lists the rules). A line
that is not one well-formed tree is reported with its file and line number
and counted as an error, as are sentences whose words differ.
"""

from __future__ import annotations

from absl import flags, logging

from t2t_keras.bin import flag_groups, program
from t2t_keras.errors import UserError
from t2t_keras.files import read_text_lines

flags.DEFINE_string("gold", None, "The gold trees: one PTB-bracketed tree a line.")
flags.DEFINE_string("test", None, "The trees to score, aligned line by line with --gold.")
flags.DEFINE_bool("sentences", False, "First print EVALB's table of one row per sentence.")
FLAGS = flags.FLAGS


def main() -> int:
    from t2t_keras.metrics import evalb

    gold_lines = read_text_lines(flag_groups.required("gold", "the file of gold trees"), "--gold")
    test_lines = read_text_lines(
        flag_groups.required("test", "the file of trees to score"), "--test"
    )
    if len(gold_lines) != len(test_lines):
        raise UserError(
            f"--gold has {len(gold_lines)} lines but --test has {len(test_lines)}: the files "
            "must hold one tree a line for the same sentences, in the same order."
        )
    scores = evalb.score_lines(gold_lines, test_lines, names=("--gold", "--test"))
    for number, score in enumerate(scores, start=1):
        if score.error and score.status == evalb.ERROR:
            logging.warning("Sentence %d: %s; counted as an error.", number, score.error)
    if warning := evalb.outer_bracket_warning(gold_lines, test_lines):
        logging.warning("%s", warning)
    print(evalb.format_report(scores, sentences=FLAGS.sentences))
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main, uses_tensorflow=False)


if __name__ == "__main__":
    run()
