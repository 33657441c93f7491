"""BLEU in three labelled conventions: sacreBLEU, the paper's tokenized BLEU, uncased.

Numbers called "BLEU" differ by a point or more depending on what is done to
the text before n-grams are counted, so every score here carries a label and
a signature saying how it was computed:

- sacreBLEU (the honest, comparable number): cased, detokenized text, the
  13a tokenization, exponential smoothing; sacreBLEU's own signature.
- the paper's convention (tensor2tensor's `get_ende_bleu.sh`): both sides
  tokenized like Moses' `tokenizer.perl -l <language>` with its defaults
  (special characters escaped as `&amp;`, `&quot;`, ...; no aggressive hyphen
  splitting), then every hyphen between two non-space characters split off as
  `##AT##-##AT##` (compound splitting), then `multi-bleu.perl`: cased, no
  further tokenization, no smoothing.
- uncased: sacreBLEU with both sides lowercased.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence

from sacrebleu.metrics import BLEU

from t2t_keras.errors import UserError

SACREBLEU_LABEL = "BLEU (sacreBLEU: cased, detokenized)"
UNCASED_LABEL = "BLEU (sacreBLEU: uncased, detokenized)"
_PAPER_LABEL = "BLEU (paper: Moses-tokenized {language}, compounds split, multi-bleu)"

# get_ende_bleu.sh runs `perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'` on
# bytes: \S is any byte but ASCII whitespace (re.ASCII does the same on text),
# and /g resumes after each match, exactly as re.sub scans.
_COMPOUND_HYPHEN = re.compile(r"(\S)-(\S)", re.ASCII)
_COMPOUND_SPLIT = r"\1 ##AT##-##AT## \2"


@functools.cache
def moses_languages() -> tuple[str, ...]:
    """The languages tokenizer.perl has rules and abbreviation lists for.

    Any other -l silently falls back to English, which a typo should not do
    here. sacremoses is imported on first use: it takes half a second, which
    every t2t-trainer would otherwise pay at start-up.
    """
    import sacremoses

    return tuple(sorted(set(sacremoses.corpus.NonbreakingPrefixes().available_langs.values())))


@dataclasses.dataclass(frozen=True)
class BleuScore:
    """One BLEU number with what it is.

    Attributes:
      label: which convention, e.g. "BLEU (sacreBLEU: cased, detokenized)".
      score: BLEU in 0..100.
      signature: how it was computed, in sacreBLEU's signature format.
      details: sacreBLEU's n-gram precisions, brevity penalty and lengths,
        e.g. "60.0/40.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)".
    """

    label: str
    score: float
    signature: str
    details: str = ""

    def __str__(self) -> str:
        details = f"{self.details}  " if self.details else ""
        return f"{self.label} = {self.score:.2f}  {details}{self.signature}"


def sacrebleu_score(hypotheses: Sequence[str], references: Sequence[str]) -> BleuScore:
    """sacreBLEU: cased, detokenized text, 13a tokenization (the comparable number).

    Args:
      hypotheses: the system's outputs, one detokenized sentence each.
      references: the reference translations, aligned with hypotheses.

    Returns:
      The score with sacreBLEU's signature.

    Raises:
      UserError: empty lists, or different numbers of hypotheses and references.
    """
    return _sacrebleu(SACREBLEU_LABEL, BLEU(), hypotheses, references)


def uncased_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> BleuScore:
    """sacreBLEU on lowercased text (13a tokenization), with its signature.

    Raises:
      UserError: empty lists, or different numbers of hypotheses and references.
    """
    return _sacrebleu(UNCASED_LABEL, BLEU(lowercase=True), hypotheses, references)


def paper_bleu(
    hypotheses: Sequence[str], references: Sequence[str], language: str = "en"
) -> BleuScore:
    """BLEU as tensor2tensor's get_ende_bleu.sh computed it for the paper's tables.

    Both sides are Moses-tokenized (tokenizer.perl's defaults, escaping
    included), compounds are split with ##AT##, and BLEU is counted on the
    resulting tokens, cased and unsmoothed, which is what multi-bleu.perl does.

    Args:
      hypotheses: the system's outputs, one detokenized sentence each.
      references: the reference translations, aligned with hypotheses, detokenized.
      language: the Moses tokenizer language (its -l), one of moses_languages().

    Returns:
      The score; its signature is sacreBLEU's for the tokenized text, prefixed
      with the preprocessing.

    Raises:
      UserError: empty lists, different counts, or an unknown language.
    """
    _check_aligned(hypotheses, references)
    tokenized_hypotheses = paper_tokenize(hypotheses, language)
    tokenized_references = paper_tokenize(references, language)
    bleu = BLEU(tokenize="none", smooth_method="none")
    score = _sacrebleu(
        _PAPER_LABEL.format(language=language), bleu, tokenized_hypotheses, tokenized_references
    )
    return dataclasses.replace(score, signature=f"pre:moses-{language}+atat|{score.signature}")


def bleu_scores(
    hypotheses: Sequence[str], references: Sequence[str], language: str = "en"
) -> list[BleuScore]:
    """The three conventions, in print order: sacreBLEU, the paper's, uncased.

    Args:
      hypotheses: the system's outputs, one detokenized sentence each.
      references: the reference translations, aligned with hypotheses.
      language: the Moses tokenizer language of the paper's convention.

    Raises:
      UserError: empty lists, different counts, or an unknown language.
    """
    _check_language(language)
    return [
        sacrebleu_score(hypotheses, references),
        paper_bleu(hypotheses, references, language),
        uncased_bleu(hypotheses, references),
    ]


def paper_tokenize(lines: Sequence[str], language: str = "en") -> list[str]:
    """Moses tokenization (tokenizer.perl defaults) then ##AT## compound splitting.

    Raises:
      UserError: a language tokenizer.perl has no rules for.
    """
    import sacremoses

    _check_language(language)
    tokenizer = sacremoses.MosesTokenizer(lang=language)
    # tokenizer.perl's defaults: escaping (no -no-escape), no aggressive
    # hyphen splitting (no -a).
    return [
        split_compounds(
            tokenizer.tokenize(line, escape=True, aggressive_dash_splits=False, return_str=True)
        )
        for line in lines
    ]


def split_compounds(text: str) -> str:
    """Splits hyphenated compounds like get_ende_bleu.sh: "rich-text" -> "rich ##AT##-##AT## text".

    Scanning resumes after each split, as perl's s///g does, so a hyphen
    whose left character the previous split consumed stays: "a-b-c" ->
    "a ##AT##-##AT## b-c", while "Nord-Süd-Ost" splits at both hyphens.
    """
    return _COMPOUND_HYPHEN.sub(_COMPOUND_SPLIT, text)


def _sacrebleu(
    label: str, bleu: BLEU, hypotheses: Sequence[str], references: Sequence[str]
) -> BleuScore:
    _check_aligned(hypotheses, references)
    result = bleu.corpus_score(list(hypotheses), [list(references)])
    details = result.format().split(" ", 3)[3]  # After "BLEU = <score> ".
    return BleuScore(label, result.score, str(bleu.get_signature()), details)


def _check_aligned(hypotheses: Sequence[str], references: Sequence[str]) -> None:
    if len(hypotheses) != len(references):
        raise UserError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: BLEU needs "
            "exactly one reference sentence per hypothesis, in the same order."
        )
    if not hypotheses:
        raise UserError(
            "No sentences to score: BLEU needs at least one hypothesis and its reference."
        )


def _check_language(language: str) -> None:
    if language not in moses_languages():
        raise UserError(
            f"Unknown Moses tokenizer language {language!r}: the paper's BLEU tokenizes with "
            f"the rules of one of {', '.join(moses_languages())}."
        )
