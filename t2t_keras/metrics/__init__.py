"""Scores of model outputs: BLEU in labelled conventions, EVALB's bracket F1 for parsing."""

from t2t_keras.metrics.bleu import (
    BleuScore,
    bleu_scores,
    paper_bleu,
    paper_tokenize,
    sacrebleu_score,
    split_compounds,
    uncased_bleu,
)
from t2t_keras.metrics.evalb import EvalbSummary, score_lines

__all__ = [
    "BleuScore",
    "EvalbSummary",
    "bleu_scores",
    "paper_bleu",
    "paper_tokenize",
    "sacrebleu_score",
    "score_lines",
    "split_compounds",
    "uncased_bleu",
]
