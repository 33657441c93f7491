"""The output-length diagnosis on a trained model: it tells a source-reading model, and
calls outputs cut short a model error only when the model does prefer them."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.metrics.output_lengths import diagnose
from t2t_keras.run.loading import TrainedModel, load_trained


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir), use_xla=False)


def test_diagnosis_of_cut_outputs(trained: TrainedModel, number_words_data: Path) -> None:
    pairs = registry.problem("translate_number_words_en_de").text_examples(
        str(number_words_data), "dev", 60
    )
    sources = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    # Outputs that stop halfway: the model, which learned where numbers end, scores
    # nearly every reference above them, though each is the reference's own beginning.
    # (A 200-step model trained on another machine may still prefer one or two.)
    cut = [" ".join(text.split()[: len(text.split()) // 2]) for text in references]
    summary = diagnose(trained.model, trained.vocabs, sources, references, cut)
    entropy = summary["cross_entropy"]
    assert entropy["source"] < 0.5 * min(entropy["other_source"], entropy["empty_source"])
    assert summary["eos"]["inside"] < 0.05 < 0.5 < summary["eos"]["at_end"]
    short = summary["short_outputs"]
    assert short["count"] == len(references)
    assert short["reference_scores_higher"] >= 0.9 * short["count"]
    assert max(summary["length_ratio_by_reference_length"].values()) <= 0.5
