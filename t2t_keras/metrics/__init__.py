"""Scores of model outputs: BLEU in labelled conventions, bracket F1 for parsing."""

from t2t_keras.metrics.bleu import (
    MOSES_LANGUAGES,
    BleuScore,
    bleu_scores,
    paper_bleu,
    paper_tokenize,
    sacrebleu_score,
    split_compounds,
    uncased_bleu,
)
from t2t_keras.metrics.bracket_f1 import (
    BracketScore,
    MalformedTreeError,
    bracket_f1,
    labeled_brackets,
)

__all__ = [
    "MOSES_LANGUAGES",
    "BleuScore",
    "BracketScore",
    "MalformedTreeError",
    "bleu_scores",
    "bracket_f1",
    "labeled_brackets",
    "paper_bleu",
    "paper_tokenize",
    "sacrebleu_score",
    "split_compounds",
    "uncased_bleu",
]
