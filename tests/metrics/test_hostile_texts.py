"""Any strings through the scores a Python caller (and the trainer's evaluation) reaches:
every output metric and every BLEU convention gives its numbers, never an exception,
for text of every script, controls, line separators and lone surrogates."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator

from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.metrics import bleu
from t2t_keras.metrics.output_metrics import OUTPUT_METRICS, score


@contextlib.contextmanager
def log_records() -> Iterator[list[logging.LogRecord]]:
    """The records logged meanwhile (a fixture's caplog lasts the whole Hypothesis test)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    try:
        yield records
    finally:
        logging.getLogger().removeHandler(handler)


texts = st.one_of(
    st.text(max_size=8),
    st.text(st.characters(exclude_characters="\n"), max_size=8),  # Lone surrogates too.
    st.sampled_from(["(S (NN a) (VB b))", "((", ")", "eins zwei", "\u2028", "\x00"]),
)
# Hypotheses and references, as many of each.
aligned = st.integers(1, 4).flatmap(
    lambda count: st.tuples(*[st.lists(texts, min_size=count, max_size=count)] * 2)
)


@ci_budget(30, deadline=None)
@given(aligned)
@example((["\ud800"], ["\ud800"]))
@example((["(S (NN \udfff))", "eins \ud83d\ude00"], ["(S (NN a))", "eins"]))
def test_every_metric_scores_any_strings(pair: tuple[list[str], list[str]]) -> None:
    hypotheses, references = pair
    with log_records() as records:
        for name in OUTPUT_METRICS:
            value, text = score(name, hypotheses, references)
            assert math.isfinite(value) or name == "bracket_f1", (name, value)
            assert text
    # What is logged about the texts can be written to a UTF-8 stream.
    for record in records:
        record.getMessage().encode("utf-8")
    for convention in bleu.bleu_scores(hypotheses, references, "en"):
        assert 0.0 <= convention.score <= 100.0 + 1e-9  # sacreBLEU rounds 100 up a little.
