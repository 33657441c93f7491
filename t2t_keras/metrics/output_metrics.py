"""The problems' output metrics by name, the one place that scores decoded text.

A problem names its metrics in `eval_metrics()`; the trainer's evaluation
and t2t-decoder both score through `score`.
"""

from __future__ import annotations

from collections.abc import Sequence

from absl import logging

from t2t_keras.errors import UserError
from t2t_keras.metrics.bleu import sacrebleu_score
from t2t_keras.metrics.evalb import (
    ERROR,
    format_report,
    outer_bracket_warning,
    score_lines,
    summarize,
)

OUTPUT_METRICS = ("bleu", "exact_match", "bracket_f1")
_ERRORS_LOGGED = 5


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """The fraction of outputs identical to their reference."""
    same = sum(h == r for h, r in zip(hypotheses, references, strict=True))
    return same / max(len(references), 1)


def score(name: str, hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """(value, printable text) of output metric `name`.

    Values: "bleu" is sacreBLEU (cased, detokenized, 13a) in 0..100,
    "exact_match" a fraction in 0..1, "bracket_f1" EVALB's labeled bracket F1
    (COLLINS.prm) of PTB trees against gold trees, in 0..100, printed as
    EVALB's summaries of all sentences and of those of at most 40 words.

    Raises:
      UserError: an unknown metric name.
    """
    if name == "bleu":
        result = sacrebleu_score(hypotheses, references)
        return result.score, str(result)
    if name == "exact_match":
        value = exact_match(hypotheses, references)
        return value, f"exact match: {100 * value:.2f}% of {len(references)} sentences"
    if name == "bracket_f1":
        return _bracket_f1(hypotheses, references)
    raise UserError(f"unknown metric {name!r}; known: {', '.join(OUTPUT_METRICS)}.")


def _bracket_f1(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """EVALB's F-measure and report; why sentences were errors, and outer brackets, logged."""
    scores = score_lines(references, hypotheses, names=("reference", "output"))
    errors = [(n, s.error) for n, s in enumerate(scores, start=1) if s.status == ERROR]
    for number, error in errors[:_ERRORS_LOGGED]:
        logging.warning("Sentence %d is an error sentence: %s.", number, _printable(error))
    if len(errors) > _ERRORS_LOGGED:
        logging.warning("... and %d more error sentences.", len(errors) - _ERRORS_LOGGED)
    if warning := outer_bracket_warning(references, hypotheses):
        logging.warning("%s", _printable(warning))
    everything, _ = summarize(scores)
    return everything.f1, format_report(scores)


def _printable(message: str | None) -> str:
    """The message with lone surrogates (from a Python caller's strings) as \\udXXX
    escapes: no UTF-8 log or stream can write them as they are."""
    return str(message).encode("utf-8", "backslashreplace").decode("utf-8")
