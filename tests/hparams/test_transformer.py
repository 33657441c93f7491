"""The paper's hparams sets hold the paper's values."""

from __future__ import annotations

import dataclasses

import pytest

from t2t_keras import registry
from t2t_keras.models import TransformerHParams
from t2t_keras.training import schedule_from_hparams

# (row, changed fields) of Table 3; every other field is base's.
TABLE3 = {
    "a1": {"num_heads": 1, "d_k": 512, "d_v": 512},
    "a2": {"num_heads": 4, "d_k": 128, "d_v": 128},
    "a3": {"num_heads": 16, "d_k": 32, "d_v": 32},
    "a4": {"num_heads": 32, "d_k": 16, "d_v": 16},
    "b1": {"d_k": 16},
    "b2": {"d_k": 32},
    "c1": {"num_encoder_layers": 2, "num_decoder_layers": 2},
    "c2": {"num_encoder_layers": 4, "num_decoder_layers": 4},
    "c3": {"num_encoder_layers": 8, "num_decoder_layers": 8},
    "c4": {"d_model": 256, "d_k": 32, "d_v": 32},
    "c5": {"d_model": 1024, "d_k": 128, "d_v": 128},
    "c6": {"d_ff": 1024},
    "c7": {"d_ff": 4096},
    "d1": {"dropout": 0.0, "embedding_dropout": 0.0},
    "d2": {"dropout": 0.2, "embedding_dropout": 0.2},
    "d3": {"label_smoothing": 0.0},
    "d4": {"label_smoothing": 0.2},
    "e": {"position_encoding": "learned"},
}


def changes_from_base(hparams: TransformerHParams) -> dict[str, object]:
    base = registry.hparams("transformer_base")
    return {
        field.name: getattr(hparams, field.name)
        for field in dataclasses.fields(hparams)
        if getattr(hparams, field.name) != getattr(base, field.name)
    }


@pytest.mark.parametrize(("row", "changes"), sorted(TABLE3.items()))
def test_table3_rows_change_only_their_columns(row: str, changes: dict) -> None:
    assert changes_from_base(registry.hparams(f"transformer_base_table3_{row}")) == changes


def test_every_table3_set_is_tested() -> None:
    registered = {name for name in registry.list_hparams() if "table3" in name}
    assert registered == {f"transformer_base_table3_{row}" for row in TABLE3}


def test_big_models() -> None:
    big = {"d_model": 1024, "d_ff": 4096, "num_heads": 16}
    assert changes_from_base(registry.hparams("transformer_big")) == {
        **big,
        "dropout": 0.3,
        "embedding_dropout": 0.3,
    }
    assert changes_from_base(registry.hparams("transformer_big_enfr")) == big


@pytest.mark.parametrize("model", ["base", "big"])
def test_single_gpu_sets_see_the_paper_batch(model: str) -> None:
    """One device with accumulation sees what 8 GPUs saw: 8 x 4096 tokens."""
    eight_gpus = registry.hparams(f"transformer_{model}")
    single = registry.hparams(f"transformer_{model}_single_gpu")
    assert eight_gpus.batch_size * 8 * eight_gpus.gradient_accumulation_steps == 32768
    assert single.batch_size * 1 * single.gradient_accumulation_steps == 32768
    assert dataclasses.replace(single, gradient_accumulation_steps=1) == eight_gpus


@pytest.mark.parametrize("name", ["transformer_parsing_wsj", "transformer_parsing_semisup"])
def test_parsing_sets(name: str) -> None:
    hparams = registry.hparams(name)
    assert (hparams.num_encoder_layers, hparams.num_decoder_layers) == (4, 4)
    assert hparams.d_model == 1024 and hparams.d_k * hparams.num_heads == 1024
    assert hparams.attention_dropout > 0
    assert (hparams.beam_size, hparams.alpha, hparams.extra_length) == (21, 0.3, 300)


def test_t2t_later_recipe_is_its_own_set() -> None:
    v3 = registry.hparams("transformer_base_v3")
    assert v3.layer_norm_position == "pre" and v3.learning_rate_schedule == "t2t"
    assert registry.hparams("transformer_base").layer_norm_position == "post"


@pytest.mark.parametrize("name", ["transformer_tiny", "transformer_small"])
def test_small_sets_are_small(name: str) -> None:
    hparams = registry.hparams(name)
    assert hparams.d_model <= 256 and hparams.num_encoder_layers <= 3


def test_every_set_has_a_summary_line() -> None:
    text = registry.help_string()
    for name in registry.list_hparams():
        line = next(line for line in text.splitlines() if line.split()[:1] == [name])
        assert len(line.split()) > 1, f"{name} has no docstring"


def test_small_cpu_set_warms_up_within_a_short_run() -> None:
    """transformer_small's shapes; the schedule peaks at step 400, not 1000, then decays."""
    small, short = registry.hparams("transformer_small"), registry.hparams("transformer_small_cpu")
    assert all(getattr(small, f) == getattr(short, f) for f in TransformerHParams.shape_fields)
    schedule = schedule_from_hparams(short)
    rates = {step: float(schedule.at_step(step)) for step in (200, 400, 1000, 3000)}
    assert rates[400] == pytest.approx(0.5 * 256**-0.5 * 400**-0.5, rel=1e-6)
    assert rates[200] < rates[400] and rates[400] > rates[1000] > rates[3000]
    assert short.batch_size == 2048  # Twice small's updates in a fixed time.
