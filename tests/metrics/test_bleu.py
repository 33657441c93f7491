"""BLEU in three conventions, checked against sacrebleu and literal Moses tokenizations."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from sacrebleu.metrics import BLEU

from t2t_keras.errors import UserError
from t2t_keras.metrics import bleu

REFERENCES = [
    'Die "Mercedes-Benz"-Gruppe verdiente 2012 rund 1,5 Mrd. Euro & damit 3.000 Euro pro Kopf.',
    'Der EU-Kommissar sagte, die Nord-Süd-Verbindung sei "nicht verhandelbar".',
    "Johnson & Johnson zahlt 2,2 Milliarden Dollar an die US-Behörden.",
    "Im Jahr 2013 stiegen die Preise um 4,5 Prozent.",
]
HYPOTHESES = [
    "Die Mercedes-Benz-Gruppe verdiente 2012 etwa 1,5 Mrd. Euro & damit 3.000 Euro pro Kopf.",
    'der eu-kommissar sagte, die Nord-Süd-Strecke sei "nicht verhandelbar".',
    "Johnson & Johnson bezahlt 2,2 Milliarden Dollar an US-Behörden.",
    "Im Jahr 2013 stiegen die Preise um 4,5 Prozent.",
]
# What `tokenizer.perl -l de | perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'` gives:
# special characters escaped, "Mrd." kept (a German abbreviation before a
# capital), the final period split, "1,5" and "3.000" kept, and no split of
# the hyphen in '" -Gruppe', which follows a space after tokenization.
TOKENIZED_REFERENCES = [
    "Die &quot; Mercedes ##AT##-##AT## Benz &quot; -Gruppe verdiente 2012 rund 1,5 Mrd. Euro "
    "&amp; damit 3.000 Euro pro Kopf .",
    "Der EU ##AT##-##AT## Kommissar sagte , die Nord ##AT##-##AT## Süd ##AT##-##AT## Verbindung "
    "sei &quot; nicht verhandelbar &quot; .",
    "Johnson &amp; Johnson zahlt 2,2 Milliarden Dollar an die US ##AT##-##AT## Behörden .",
    "Im Jahr 2013 stiegen die Preise um 4,5 Prozent .",
]
TOKENIZED_HYPOTHESES = [
    "Die Mercedes ##AT##-##AT## Benz ##AT##-##AT## Gruppe verdiente 2012 etwa 1,5 Mrd. Euro "
    "&amp; damit 3.000 Euro pro Kopf .",
    "der eu ##AT##-##AT## kommissar sagte , die Nord ##AT##-##AT## Süd ##AT##-##AT## Strecke "
    "sei &quot; nicht verhandelbar &quot; .",
    "Johnson &amp; Johnson bezahlt 2,2 Milliarden Dollar an US ##AT##-##AT## Behörden .",
    "Im Jahr 2013 stiegen die Preise um 4,5 Prozent .",
]


def _sacrebleu(metric: BLEU, hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    score = metric.corpus_score(hypotheses, [references]).score
    return score, str(metric.get_signature())


def test_sacrebleu_is_cased_detokenized_13a() -> None:
    expected, signature = _sacrebleu(BLEU(), HYPOTHESES, REFERENCES)
    score = bleu.sacrebleu_score(HYPOTHESES, REFERENCES)
    assert score.score == pytest.approx(expected, abs=1e-9)
    assert score.signature == signature
    assert "case:mixed" in signature
    assert "tok:13a" in signature


def test_uncased_is_sacrebleu_lowercased() -> None:
    expected, signature = _sacrebleu(BLEU(lowercase=True), HYPOTHESES, REFERENCES)
    score = bleu.uncased_bleu(HYPOTHESES, REFERENCES)
    assert score.score == pytest.approx(expected, abs=1e-9)
    assert score.signature == signature
    assert "case:lc" in signature


def test_paper_tokenization_is_moses_escaped_then_atat() -> None:
    assert bleu.paper_tokenize(REFERENCES, "de") == TOKENIZED_REFERENCES
    assert bleu.paper_tokenize(HYPOTHESES, "de") == TOKENIZED_HYPOTHESES


def test_paper_bleu_is_multi_bleu_on_the_tokenized_text() -> None:
    metric = BLEU(tokenize="none", smooth_method="none")
    expected, signature = _sacrebleu(metric, TOKENIZED_HYPOTHESES, TOKENIZED_REFERENCES)
    score = bleu.paper_bleu(HYPOTHESES, REFERENCES, "de")
    assert score.score == pytest.approx(expected, abs=1e-9)
    assert score.signature == f"pre:moses-de+atat|{signature}"


def test_paper_bleu_depends_on_the_language() -> None:
    # English has no "Mrd." abbreviation: its period is split off, so the score moves.
    german = bleu.paper_bleu(HYPOTHESES, REFERENCES, "de").score
    english = bleu.paper_bleu(HYPOTHESES, REFERENCES, "en").score
    assert abs(german - english) > 0.5


def test_paper_bleu_is_unsmoothed_like_multi_bleu() -> None:
    # multi-bleu.perl gives 0 when no 4-gram matches; sacreBLEU smooths it away.
    hypotheses, references = ["ein kurzer Satz hier"], ["ein kurzer Satz dort"]
    assert bleu.paper_bleu(hypotheses, references, "de").score == 0.0
    assert bleu.sacrebleu_score(hypotheses, references).score > 0.0


def test_the_three_conventions_differ_and_come_labelled_in_order() -> None:
    scores = bleu.bleu_scores(HYPOTHESES, REFERENCES, "de")
    assert [s.label for s in scores] == [
        bleu.SACREBLEU_LABEL,
        "BLEU (paper: Moses-tokenized de, compounds split, multi-bleu)",
        bleu.UNCASED_LABEL,
    ]
    values = [s.score for s in scores]
    assert values[0] == bleu.sacrebleu_score(HYPOTHESES, REFERENCES).score
    assert values[1] == bleu.paper_bleu(HYPOTHESES, REFERENCES, "de").score
    assert values[2] == bleu.uncased_bleu(HYPOTHESES, REFERENCES).score
    # A mix-up between any two conventions would show.
    for first in range(3):
        for second in range(first + 1, 3):
            assert abs(values[first] - values[second]) > 0.5, values


def test_score_prints_as_one_labelled_line() -> None:
    score = bleu.BleuScore("BLEU (x)", 27.3456, "nrefs:1|tok:13a")
    assert str(score) == "BLEU (x) = 27.35  nrefs:1|tok:13a"


CHAINS = {
    "rich-text format": "rich ##AT##-##AT## text format",
    "a-b-c": "a ##AT##-##AT## b-c",
    "a-b-c-d": "a ##AT##-##AT## b-c ##AT##-##AT## d",
    "x--y": "x ##AT##-##AT## -y",
    "-a- b -": "-a- b -",
    "Süd-Ost": "Süd ##AT##-##AT## Ost",
    "Nord-Süd-Ost": "Nord ##AT##-##AT## Süd ##AT##-##AT## Ost",
}


def test_compound_splitting_resumes_after_each_match_like_perl() -> None:
    for text, expected in CHAINS.items():
        assert bleu.split_compounds(text) == expected


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_compound_splitting_equals_the_perl_one_liner() -> None:
    text = "\n".join(CHAINS) + "\n"
    perl = subprocess.run(
        ["perl", "-ple", r"s{(\S)-(\S)}{$1 ##AT##-##AT## $2}g"],
        input=text.encode(),
        capture_output=True,
        check=True,
    )
    assert perl.stdout.decode().splitlines() == [bleu.split_compounds(t) for t in CHAINS]


def test_different_counts_name_both() -> None:
    with pytest.raises(UserError, match="3 hypotheses but 2 references"):
        bleu.sacrebleu_score(["a", "b", "c"], ["a", "b"])
    with pytest.raises(UserError, match="1 hypotheses but 2 references"):
        bleu.bleu_scores(["a"], ["a", "b"], "de")


def test_empty_lists_are_an_error() -> None:
    with pytest.raises(UserError, match="No sentences to score"):
        bleu.bleu_scores([], [], "en")


def test_unknown_language_lists_the_known_ones() -> None:
    with pytest.raises(UserError, match=r"Unknown Moses tokenizer language 'ger'.* de, "):
        bleu.paper_bleu(["a"], ["a"], "ger")
