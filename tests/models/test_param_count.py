"""count_params against the paper's Table 3, a count by hand and the built model's weights."""

from __future__ import annotations

import dataclasses

import keras
import pytest

from t2t_keras import registry
from t2t_keras.errors import UserError
from t2t_keras.models import TransformerHParams, count_params
from tests.models.test_transformer import TINY, build

PAPER_VOCAB = 37000

# Table 3's params column (millions) for each set that has one.
PAPER_PARAMS_MILLIONS = {
    "transformer_base": 65,
    "transformer_base_table3_b1": 58,
    "transformer_base_table3_b2": 60,
    "transformer_base_table3_c1": 36,
    "transformer_base_table3_c2": 50,
    "transformer_base_table3_c3": 80,
    "transformer_base_table3_c4": 28,
    "transformer_base_table3_c5": 168,
    "transformer_base_table3_c6": 53,
    "transformer_base_table3_c7": 90,
    "transformer_big": 213,
}


@pytest.mark.parametrize(("set_name", "millions"), sorted(PAPER_PARAMS_MILLIONS.items()))
def test_table3_parameter_counts_match_the_paper(set_name: str, millions: int) -> None:
    """Within 3M or 5% of the paper, whichever is larger (see PAPER.md)."""
    paper = millions * 1_000_000
    ours = count_params(registry.hparams(set_name), PAPER_VOCAB)
    assert abs(ours - paper) <= max(3_000_000, 0.05 * paper), f"{set_name}: {ours:,}"


ROWS_WITHOUT_PAPER_COUNT = [
    name
    for name in registry.list_hparams()
    if "table3" in name and name not in PAPER_PARAMS_MILLIONS
]


@pytest.mark.parametrize("set_name", ROWS_WITHOUT_PAPER_COUNT)
def test_rows_without_a_paper_count_keep_the_size_of_base(set_name: str) -> None:
    """Rows A, D and E keep the model size of base (A: h * d_k = d_model)."""
    base = count_params(registry.hparams("transformer_base"), PAPER_VOCAB)
    ours = count_params(registry.hparams(set_name), PAPER_VOCAB)
    max_length = registry.hparams(set_name).max_length
    learned_positions = 2 * max_length * 512 if set_name.endswith("_e") else 0
    assert ours == base + learned_positions


def test_count_by_hand_of_a_tiny_model() -> None:
    """Vocab 10, d_model 4, d_ff 6, 2 heads of d_k 3 and d_v 2, one layer each."""
    hparams = TransformerHParams(
        num_encoder_layers=1, num_decoder_layers=1, d_model=4, d_ff=6, num_heads=2, d_k=3, d_v=2
    )
    embedding = 10 * 4
    attention = 4 * 6 + 4 * 6 + 4 * 4 + 4 * 4  # W^Q, W^K (2 heads x 3), W^V, W^O (2 x 2)
    feed_forward = 4 * 6 + 6 + 6 * 4 + 4
    layer_norm = 4 + 4
    encoder = attention + feed_forward + 2 * layer_norm
    decoder = 2 * attention + feed_forward + 3 * layer_norm
    assert count_params(hparams, 10) == embedding + encoder + decoder
    pre_norm = dataclasses.replace(hparams, layer_norm_position="pre")
    assert count_params(pre_norm, 10) == embedding + encoder + decoder + 2 * layer_norm
    learned = dataclasses.replace(hparams, position_encoding="learned", max_length=7)
    assert count_params(learned, 10) == embedding + encoder + decoder + 2 * 7 * 4


def test_separate_embeddings() -> None:
    hparams = TransformerHParams(shared_embeddings=False)
    shared = count_params(TransformerHParams(), 100)
    untied = dataclasses.replace(hparams, tie_target_embeddings=False)
    assert count_params(hparams, 100, 60) == shared - 100 * 512 + (100 + 60) * 512
    assert count_params(untied, 100, 60) == count_params(hparams, 100, 60) + 60 * 512


def test_vocab_size_comes_from_hparams_or_argument() -> None:
    assert count_params(TransformerHParams(vocab_size=500)) == count_params(
        TransformerHParams(), 500
    )
    with pytest.raises(UserError, match="needs a vocabulary size"):
        count_params(TransformerHParams())
    with pytest.raises(UserError, match="shared_embeddings=true needs one vocabulary"):
        count_params(TransformerHParams(), 100, 60)


def test_target_vocab_size_comes_from_hparams_or_argument() -> None:
    hparams = TransformerHParams(vocab_size=100, target_vocab_size=60, shared_embeddings=False)
    assert count_params(hparams) == count_params(
        TransformerHParams(shared_embeddings=False), 100, 60
    )
    assert count_params(hparams, 200) == count_params(hparams, 200, 60)
    assert count_params(hparams, 100, 70) - count_params(hparams) == 10 * 512
    # With one matrix target_vocab_size may only repeat vocab_size; the argument overrides both.
    same = TransformerHParams(vocab_size=100, target_vocab_size=100)
    assert count_params(same, 500) == count_params(TransformerHParams(), 500)


def _sets_of_distinct_fields() -> list[str]:
    """Table 3's sets and big, the first of each group that changes the same fields of
    base's shapes: A1 for A1-A4 (heads), C1 for C1-C3 (layers), and so on. Within a
    group only the numbers the weight count multiplies differ. Rows D change only
    dropout and label smoothing: D1 stands for them and for base's own shapes."""
    base = registry.hparams("transformer_base")
    regularization = {"dropout": 0.0, "embedding_dropout": 0.0, "label_smoothing": 0.0}
    names = [name for name in registry.list_hparams() if "table3" in name] + ["transformer_big"]
    by_fields: dict[frozenset[str], str] = {}
    for name in names:
        shapes = dataclasses.replace(registry.hparams(name), **regularization)
        changed = frozenset(
            field.name
            for field in dataclasses.fields(shapes)
            if getattr(shapes, field.name) != getattr(base, field.name)
        )
        by_fields.setdefault(changed, name)
    return list(by_fields.values())


@pytest.mark.parametrize("set_name", _sets_of_distinct_fields())
def test_built_model_has_count_params_weights(set_name: str) -> None:
    hparams = registry.hparams(set_name).override("vocab_size=64")
    model = build(hparams)
    assert model.count_params() == count_params(hparams)
    keras.backend.clear_session()


@pytest.mark.parametrize(
    "overrides",
    [
        "layer_norm_position=pre",
        "position_encoding=learned",
        "shared_embeddings=false",
        "shared_embeddings=false,tie_target_embeddings=false",
        "leaf_positions=true,leaf_id=4",
        "leaf_words=true,leaf_id=4",
        "leaf_positions=true,leaf_words=true,leaf_id=4",
        "attention_bias=true,logits_bias=true",
        "attention_bias=true,logits_bias=true,shared_embeddings=false,target_vocab_size=40",
    ],
)
def test_variants_have_count_params_weights(overrides: str) -> None:
    hparams = TINY.override(overrides)
    assert build(hparams).count_params() == count_params(hparams)
