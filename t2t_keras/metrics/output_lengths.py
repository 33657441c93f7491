"""Why a trained model's outputs are short: its source use, its EOS, and model or search error.

`diagnose` teacher-forces the model on (source, reference) pairs and reports:

  - cross_entropy: per reference token with the true source, with each
    reference paired with another sentence's source, and with an empty source
    (a model that reads its source scores the first far below the others);
  - eos: the mean probability of EOS at the positions inside the references
    and at their ends, and the share of references where EOS gets more than
    0.1 before the end (a model that ends early puts mass there);
  - given the model's outputs, length_ratio_by_reference_length (output words
    / reference words, by reference length in words) and short_outputs: the
    outputs under 0.8x their reference's words, and in how many of them the
    model scores the reference above its own output, summed and per token. Few
    means a model error (the model prefers the short output, so a wider search
    will not lengthen it); many means a search error.

`benchmarks/output_lengths.py` runs it on files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from t2t_keras.data.ids import EOS_ID, padded_ids
from t2t_keras.data.vocab import Vocabulary

LENGTH_BINS = ((0, 10), (10, 15), (15, 20), (20, 25), (25, 30), (30, 10**6))


def teacher_forced_scores(
    model: tf.keras.Model,
    vocabs: dict[str, Vocabulary],
    sources: Sequence[str],
    targets: Sequence[str],
    batch: int = 64,
) -> list:
    """Per pair: (log-probability of each target token, P(EOS) at each position)."""
    results = []
    for start in range(0, len(sources), batch):
        inputs = [
            [*vocabs["inputs"].encode(text), EOS_ID] for text in sources[start : start + batch]
        ]
        outputs = [
            [*vocabs["targets"].encode(text), EOS_ID] for text in targets[start : start + batch]
        ]
        features = {"inputs": padded_ids(inputs), "targets": padded_ids(outputs)}
        log_probs = tf.nn.log_softmax(model(features, training=False)).numpy()
        for row, ids in enumerate(outputs):
            positions = np.arange(len(ids))
            results.append(
                (log_probs[row, positions, ids], np.exp(log_probs[row, positions, EOS_ID]))
            )
    return results


def _cross_entropy(pairs: list) -> float:
    return round(float(-np.concatenate([token for token, _ in pairs]).mean()), 3)


def _length_ratios(outputs: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    ratios = {}
    for low, high in LENGTH_BINS:
        chosen = [i for i, text in enumerate(references) if low <= len(text.split()) < high]
        if chosen:
            words = sum(len(outputs[i].split()) for i in chosen)
            label = f"{low}-{high - 1}" if high < 10**6 else f"{low}+"
            ratios[label] = round(words / sum(len(references[i].split()) for i in chosen), 3)
    return ratios


def diagnose(
    model: tf.keras.Model,
    vocabs: dict[str, Vocabulary],
    sources: list[str],
    references: list[str],
    outputs: list[str] | None,
) -> dict[str, Any]:
    true = teacher_forced_scores(model, vocabs, sources, references)
    shifted = teacher_forced_scores(model, vocabs, sources[1:] + sources[:1], references)
    empty = teacher_forced_scores(model, vocabs, [""] * len(sources), references)
    inside = np.concatenate([eos[:-1] for _, eos in true])
    summary = {
        "cross_entropy": {
            "source": _cross_entropy(true),
            "other_source": _cross_entropy(shifted),
            "empty_source": _cross_entropy(empty),
        },
        "eos": {
            "inside": round(float(inside.mean()), 4),
            "at_end": round(float(np.mean([eos[-1] for _, eos in true])), 3),
            "references_with_early_eos_over_0.1": round(
                float(np.mean([(eos[:-1] > 0.1).any() for _, eos in true])), 3
            ),
        },
    }
    if outputs is not None:
        own = teacher_forced_scores(model, vocabs, sources, outputs)
        short = [
            i
            for i, text in enumerate(outputs)
            if len(text.split()) < 0.8 * len(references[i].split())
        ]
        summary["length_ratio_by_reference_length"] = _length_ratios(outputs, references)
        summary["short_outputs"] = {
            "count": len(short),
            "reference_scores_higher": sum(int(true[i][0].sum() > own[i][0].sum()) for i in short),
            "reference_scores_higher_per_token": sum(
                int(true[i][0].mean() > own[i][0].mean()) for i in short
            ),
        }
    return summary
