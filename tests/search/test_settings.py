"""Decoding settings are decided once: `DecodeHParams.resolve` fills the unset
search settings from the model's hparams, and nothing else reads those defaults."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from t2t_keras.errors import UserError
from t2t_keras.hparam import HParamsError
from t2t_keras.hparams.transformer import transformer_parsing_small, transformer_tiny
from t2t_keras.search.settings import (
    SEARCH_SETTINGS,
    DecodeHParams,
    SearchDefaults,
    SearchSettings,
)

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("t2t_keras", "bin", "problems", "hparams")
# The settings a model's hparams set decides when --decode_hparams leaves them unset.
FROM_MODEL = tuple(field.name for field in dataclasses.fields(SearchDefaults))
# The one function that reads them (`DecodeHParams.resolve` calls it).
READER = "SearchDefaults.of"


def _is_model_hparams(node: ast.expr) -> bool:
    """An expression naming a model's hparams: `hparams`, `model.hparams`, `model_hparams`..."""
    text = ast.unparse(node)
    return "hparams" in text.lower() and "decode_hparams" not in text


def _reads(tree: ast.Module) -> list[tuple[str, int, str]]:
    """(function, line, code) of each read of a defaulted search setting from model hparams."""
    found = []

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            scope = f"{scope}.{node.name}" if scope else node.name
        reads = (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and node.attr in FROM_MODEL
            and _is_model_hparams(node.value)
        ) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and _is_model_hparams(node.args[0])
            and not (
                isinstance(node.args[1], ast.Constant) and node.args[1].value not in FROM_MODEL
            )
        )
        if reads:
            found.append((scope, node.lineno, ast.unparse(node)))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, "")
    return found


def test_only_the_resolving_function_reads_the_model_search_defaults() -> None:
    reads = [
        f"{path.relative_to(ROOT)}:{line} in {scope}: {code}"
        for directory in LIBRARY
        for path in sorted((ROOT / directory).rglob("*.py"))
        for scope, line, code in _reads(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert [read for read in reads if f" in {READER}: " not in read] == []
    assert len(reads) == 1, reads  # The check itself still sees the one read there is.


@pytest.mark.parametrize(
    "code",
    [
        "def f(model):\n    return model.hparams.beam_size",
        "def f(trained, s):\n    return s.alpha or trained.hparams.alpha",
        "class T:\n    def g(self, model_hparams, name):\n        return getattr(model_hparams, name)",
        "def h(hparams):\n    return getattr(hparams, 'extra_length')",
    ],
)
def test_a_second_place_filling_defaults_is_found(code: str) -> None:
    assert len(_reads(ast.parse(code))) == 1


def test_resolving_fills_only_what_is_unset() -> None:
    tiny, parsing = transformer_tiny(), transformer_parsing_small()
    given = DecodeHParams().override("beam_size=2,batch_size=3,return_beams=true")
    settings = given.resolve(tiny)
    assert settings.search == SearchSettings(
        beam_size=2,
        alpha=tiny.alpha,
        length_penalty="gnmt",
        extra_length=tiny.extra_length,
        slot_extra_length=tiny.extra_length,  # One pass.
        return_beams=True,
        min_length=1,
        stopping="first_k",
        tree_constraint=True,
        sampling=False,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        seed=0,
        samples_per_input=1,
    )
    assert (settings.batch_size, settings.num_samples, settings.search.num_returned) == (3, 0, 2)
    parser = DecodeHParams().resolve(parsing).search
    assert (parser.beam_size, parser.alpha, parser.extra_length) == (
        parsing.beam_size,
        parsing.alpha,
        parsing.extra_length,
    )
    assert (parser.beam_size, parser.extra_length) != (tiny.beam_size, tiny.extra_length)
    # The sets search in one pass: their slots hold every position extra_length allows.
    assert tiny.slot_extra_length is None
    assert settings.search.slot_extra_length == tiny.extra_length
    assert parser.slot_extra_length == parsing.extra_length
    # An export's stored defaults resolve alike; a resolved search gives its own back.
    assert DecodeHParams().resolve(SearchDefaults.of(tiny)) == DecodeHParams().resolve(tiny)
    assert SearchDefaults.of(settings.search) == SearchDefaults(
        2, tiny.alpha, tiny.extra_length, tiny.extra_length
    )
    assert tuple(field.name for field in dataclasses.fields(SearchSettings)) == SEARCH_SETTINGS


def test_the_length_penalty_form_is_the_models_unless_given() -> None:
    """A pretrained model's form (length ** alpha) is its default; exports stored
    before the field, and hparams without it, keep GNMT's."""
    imported = transformer_tiny().override("length_penalty=length,alpha=1.0")
    assert DecodeHParams().resolve(imported).search.length_penalty == "length"
    given = DecodeHParams().override("length_penalty=gnmt")
    assert given.resolve(imported).search.length_penalty == "gnmt"
    assert DecodeHParams().resolve(transformer_tiny()).search.length_penalty == "gnmt"
    old_export = SearchDefaults(4, 0.6, 50, 50)
    assert DecodeHParams().resolve(old_export).search.length_penalty == "gnmt"
    with pytest.raises(HParamsError, match="length_penalty"):
        DecodeHParams().override("length_penalty=power")


def test_slots_never_hold_more_than_the_longest_output_and_old_exports_search_in_one_pass() -> None:
    tiny = transformer_tiny()
    wide = DecodeHParams().override("slot_extra_length=500").resolve(tiny).search
    assert wide.slot_extra_length == tiny.extra_length
    exported = SearchDefaults(tiny.beam_size, tiny.alpha, 20)  # Stored before the field.
    assert DecodeHParams().resolve(exported).search.slot_extra_length == 20
    with pytest.raises(HParamsError, match="slot_extra_length"):
        DecodeHParams().override("slot_extra_length=-1")


def test_greedy_is_beam_one_stopping_at_the_first() -> None:
    tiny = transformer_tiny()
    assert DecodeHParams(beam_size=1).resolve(tiny).search.is_greedy
    assert not DecodeHParams(beam_size=1, stopping="best_possible").resolve(tiny).search.is_greedy
    assert not DecodeHParams(beam_size=2).resolve(tiny).search.is_greedy


def test_an_export_takes_only_search_settings() -> None:
    DecodeHParams(beam_size=2, alpha=1.0, return_beams=True).check_search_only()
    with pytest.raises(UserError, match="sets batch_size, which an exported model does not have"):
        DecodeHParams(batch_size=2).check_search_only()


def test_sampling_searches_one_row_a_sample() -> None:
    """Whatever the model's beam, sampling draws with beam 1; its samples are the
    hypotheses returned."""
    tiny = transformer_tiny()
    given = DecodeHParams().override("sampling=true,temperature=0.8,top_k=10,samples_per_input=5")
    search = given.resolve(tiny).search
    assert tiny.beam_size > 1 and search.beam_size == 1 and search.is_greedy
    assert (search.temperature, search.top_k, search.top_p, search.seed) == (0.8, 10, 1.0, 0)
    assert search.num_returned == 5
    assert DecodeHParams().override("sampling=true,beam_size=1").resolve(tiny).search.sampling
    given.check_search_only()  # An export takes them.


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            "sampling=true,temperature=0",
            "temperature=0.0 is not valid: temperature must be a number more than 0.",
        ),
        ("sampling=true,temperature=-0.5", "temperature must be a number more than 0."),
        (
            "sampling=true,top_p=0",
            "top_p=0.0 is not valid: top_p must be more than 0 and at most 1.",
        ),
        ("sampling=true,top_p=1.01", "top_p must be more than 0 and at most 1."),
        ("sampling=true,top_k=-1", "top_k=-1 is not valid: top_k must be 0 or more."),
        ("sampling=true,samples_per_input=0", "samples_per_input must be at least 1."),
        ("sampling=true,seed=-1", "seed must be from 0 to 2147483647."),
        ("sampling=true,beam_size=4", "beam_size=4 cannot go with sampling=true"),
        ("sampling=true,return_beams=true", "return_beams=true cannot go with sampling=true"),
        ("sampling=true,stopping=best_possible", "stopping=best_possible cannot go with sampling"),
        ("temperature=0.8", "temperature=0.8 is set but sampling is false"),
        ("top_p=0.9,samples_per_input=2", "top_p=0.9 is set but sampling is false"),
    ],
)
def test_sampling_settings_are_refused_in_one_sentence(given: str, message: str) -> None:
    with pytest.raises(UserError) as raised:
        DecodeHParams().override(given)
    text = str(raised.value)
    assert message in text and "\n" not in text and text.count(". ") == 0, text
