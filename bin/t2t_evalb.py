"""t2t-evalb: labeled bracket F1 of parse trees, by EVALB's rules with COLLINS.prm.

t2t-evalb --gold=GOLD_TREES --test=TEST_TREES [--sentences]

Both files hold one PTB-bracketed tree a line, in the same order, with or
without an outer TOP, ROOT or empty bracket. Prints EVALB's summary for all
sentences and for those of at most 40 words: sentences, error sentences,
bracketing recall, precision and F1, complete match, average crossing and
tagging accuracy (`t2t_keras/metrics/evalb.py` lists the rules). A line that
is not one well-formed tree is reported with its file and line number, and
its sentence is counted as an error; so is a sentence whose words differ.
--sentences also prints one line per sentence.
"""

from __future__ import annotations

from typing import Any

from absl import flags, logging

from t2t_keras.bin import common
from t2t_keras.errors import UserError
from t2t_keras.files import read_text_lines

flags.DEFINE_string("gold", None, "The gold trees: one PTB-bracketed tree a line.")
flags.DEFINE_string("test", None, "The trees to score, aligned line by line with --gold.")
flags.DEFINE_bool("sentences", False, "Also print each sentence's counts.")
FLAGS = flags.FLAGS


def main() -> int:
    from t2t_keras.metrics import evalb

    gold_lines = read_text_lines(common.required("gold", "the file of gold trees"), "--gold")
    test_lines = read_text_lines(common.required("test", "the file of trees to score"), "--test")
    if len(gold_lines) != len(test_lines):
        raise UserError(
            f"--gold has {len(gold_lines)} lines but --test has {len(test_lines)}: the files "
            "must hold one tree a line for the same sentences, in the same order."
        )
    scores = [
        _score_line(evalb, number, gold_line, test_line)
        for number, (gold_line, test_line) in enumerate(
            zip(gold_lines, test_lines, strict=True), start=1
        )
    ]
    if FLAGS.sentences:
        for number, score in enumerate(scores, start=1):
            print(_sentence_line(number, score))
    everything, short = evalb.summarize(scores)
    print(_summary("All sentences", everything))
    print(_summary(f"Sentences of at most {evalb.CUTOFF_LENGTH} words", short))
    return 0


def _score_line(evalb: Any, number: int, gold_line: str, test_line: str) -> Any:
    """The sentence's score; a malformed line is logged and scored as an error."""
    trees = []
    for name, line in (("--gold", gold_line), ("--test", test_line)):
        try:
            trees.append(evalb.parse_tree(line))
        except evalb.TreeError as error:
            logging.warning(
                "%s line %d is not a tree (%s); counted as an error.", name, number, error
            )
            return evalb.SentenceScore(error=f"{name} line {number}: {error}")
    return evalb.score_sentence(*trees)


def _sentence_line(number: int, score: Any) -> str:
    if score.error:
        return f"{number:5d}  error: {score.error}"
    return (
        f"{number:5d}  length {score.length:3d}  matched {score.matched:3d}  "
        f"gold {score.gold_brackets:3d}  test {score.test_brackets:3d}  "
        f"crossing {score.crossing:2d}  tags {score.correct_tags}/{score.words}"
    )


def _summary(title: str, summary: Any) -> str:
    valid = summary.sentences - summary.errors
    crossing = summary.crossing / valid if valid else 0.0
    return "\n".join(
        [
            f"=== {title} ===",
            f"Number of sentences        = {summary.sentences:6d}",
            f"Number of error sentences  = {summary.errors:6d}",
            f"Bracketing recall          = {summary.recall:6.2f}",
            f"Bracketing precision       = {summary.precision:6.2f}",
            f"Bracketing F1              = {summary.f1:6.2f}",
            f"Complete match             = {summary.complete_match_percent:6.2f}",
            f"Average crossing           = {crossing:6.2f}",
            f"Tagging accuracy           = {summary.tagging_accuracy:6.2f}",
        ]
    )


def run() -> None:
    """Console entry point."""
    common.run(main, uses_tensorflow=False)


if __name__ == "__main__":
    run()
