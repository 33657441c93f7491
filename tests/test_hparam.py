"""HParams: typed overrides, validation, JSON, help text."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras import registry
from t2t_keras.hparam import HParams, HParamsError
from t2t_keras.models import TransformerHParams
from t2t_keras.search.settings import DecodeHParams


@dataclasses.dataclass(frozen=True)
class ExampleHParams(HParams):
    """One field of every supported type."""

    count: int = 3  # an integer
    rate: float = 0.5  # a number
    enabled: bool = False  # a switch
    label: str = "x"  # some text
    mode: Literal["fast", "slow"] = "fast"  # a choice
    sizes: tuple[int, ...] = (1, 2)  # a list of integers
    scale: float | None = None  # an optional number
    # A comment above a field
    # may take two lines.
    names: tuple[str, ...] = ()

    def validate(self) -> None:
        self.require(self.count >= 0, "count", "0 or more")


@dataclasses.dataclass(frozen=True)
class RedeclaredHParams(ExampleHParams):
    count: int = 9


def test_override_parses_every_type() -> None:
    hparams = ExampleHParams().override(
        "count=7, rate=2, enabled=true, label='a,b', mode=slow, sizes=[4, 5,6], "
        "scale=0.25, names=[de,en]"
    )
    assert hparams == ExampleHParams(
        count=7,
        rate=2.0,
        enabled=True,
        label="a,b",
        mode="slow",
        sizes=(4, 5, 6),
        scale=0.25,
        names=("de", "en"),
    )
    assert isinstance(hparams.rate, float)


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        ("enabled=True", "enabled", True),
        ("enabled=0", "enabled", False),
        ("enabled=no", "enabled", False),
        ("sizes=[]", "sizes", ()),
        ("sizes=(3)", "sizes", (3,)),
        ("scale=None", "scale", None),
        ("rate=1e-9", "rate", 1e-9),
        ("count=-0", "count", 0),
        ('label="quoted"', "label", "quoted"),
        ("label=a=b", "label", "a=b"),
        ("", "count", 3),
        ("count=4,", "count", 4),
        ("label=it's", "label", "it's"),
        ("names=['a,b', c]", "names", ("a,b", "c")),
        ("rate=-.5E2", "rate", -50.0),
    ],
)
def test_override_values(spec: str, field: str, value: object) -> None:
    assert getattr(ExampleHParams().override(spec), field) == value


def test_override_returns_a_new_instance() -> None:
    original = ExampleHParams()
    changed = original.override("count=9")
    assert original.count == 3 and changed.count == 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.count = 1  # type: ignore[misc]


def test_unknown_key_suggests_close_fields() -> None:
    with pytest.raises(HParamsError) as caught:
        TransformerHParams().override("num_head=4")
    message = str(caught.value)
    assert "Unknown hparam 'num_head'" in message
    assert "Did you mean num_heads" in message
    assert "d_model" in message  # The list of every field.


@pytest.mark.parametrize(
    ("spec", "expected_message"),
    [
        ("count=abc", "count=abc is not valid: count expects an integer"),
        ("count=1.5", "count expects an integer"),
        ("rate=fast", "rate expects a finite number"),
        ("enabled=maybe", "enabled expects true or false"),
        ("mode=medium", "mode expects one of fast, slow"),
        ("sizes=1,2", "sizes=1 is not valid: sizes expects a list of int in brackets, e.g. [1,2]"),
        ("sizes=5", "sizes expects a list of int in brackets"),
        ("sizes=[1,x]", "sizes=x is not valid: sizes expects an integer"),
        ("sizes=[1,2", "Unbalanced brackets"),
        ("scale=big", "scale=big is not valid: scale expects a finite number, e.g. 0.1, or None"),
        ("count", "Malformed hparams override 'count'"),
        ("=3", "Malformed hparams override '=3'"),
        ("count=1,count=2", "'count' is set twice"),
        ("count=-1", "count=-1 is not valid: count must be 0 or more"),
        ("count=\u0663", "count expects an integer"),
        ("rate=inf", "rate expects a finite number"),
        ("rate=nan", "rate expects a finite number"),
        ("sizes=[1)", "Unbalanced brackets"),
        ("sizes=[1,,2]", "the list has an empty item"),
        ("label='open", "Unbalanced brackets or quotes"),
    ],
)
def test_bad_overrides_say_what_is_wrong(spec: str, expected_message: str) -> None:
    with pytest.raises(HParamsError, match=expected_message.replace("[", r"\[")):
        ExampleHParams().override(spec)


def test_errors_are_value_errors_and_one_paragraph() -> None:
    with pytest.raises(ValueError) as caught:
        TransformerHParams().override("dropout=1.5")
    assert str(caught.value) == "hparam dropout=1.5 is not valid: dropout must be in [0, 1)."


def test_constructor_checks_types() -> None:
    with pytest.raises(HParamsError, match="d_model expects an integer"):
        TransformerHParams(d_model="512")  # type: ignore[arg-type]
    with pytest.raises(HParamsError, match="shared_embeddings expects true or false"):
        TransformerHParams(shared_embeddings=1)  # type: ignore[arg-type]
    with pytest.raises(HParamsError, match="layer_norm_position expects one of post, pre"):
        TransformerHParams(layer_norm_position="middle")  # type: ignore[arg-type]
    assert TransformerHParams(learning_rate=2).learning_rate == 2.0


@pytest.mark.parametrize("set_name", registry.list_hparams())
def test_every_field_of_every_set_overrides_with_its_own_text(set_name: str) -> None:
    """Each value, written as an override, parses back to itself."""
    hparams = registry.hparams(set_name)
    for line in hparams.describe().splitlines():
        name = line.split()[0]
        text = line.split(" = ", 1)[1].split(" (", 1)[0]
        assert getattr(hparams.override(f"{name}={text}"), name) == getattr(hparams, name)


@pytest.mark.parametrize("set_name", registry.list_hparams())
def test_json_round_trip_of_every_set(set_name: str) -> None:
    hparams = registry.hparams(set_name).override("beam_size=7,alpha=0.25")
    text = hparams.to_json()
    assert type(hparams).from_json(text) == hparams
    assert json.loads(text)["beam_size"] == 7


def test_json_round_trip_keeps_tuples_and_none() -> None:
    hparams = ExampleHParams(sizes=(8, 9), scale=None, names=("a",))
    assert json.loads(hparams.to_json())["sizes"] == [8, 9]
    assert ExampleHParams.from_json(hparams.to_json()) == hparams


@pytest.mark.parametrize("label", ["a,b", "it's", 'say "hi"', "[x]", "", " padded "])
def test_text_is_described_so_that_it_can_be_pasted_back(label: str) -> None:
    hparams = ExampleHParams(label=label)
    line = next(line for line in hparams.describe().splitlines() if "label =" in line)
    written = line.split(" = ", 1)[1].rsplit(" (str)", 1)[0]
    assert ExampleHParams().override(f"label={written}").label == label


def test_infinite_values_are_refused_everywhere() -> None:
    with pytest.raises(HParamsError, match="finite"):
        ExampleHParams(rate=float("inf"))
    with pytest.raises(HParamsError, match="finite"):
        ExampleHParams.from_json('{"rate": Infinity}')


def test_redeclared_field_keeps_its_inherited_comment() -> None:
    assert RedeclaredHParams.field_help()["count"] == "an integer"
    assert RedeclaredHParams().count == 9


def test_json_missing_fields_take_defaults() -> None:
    assert ExampleHParams.from_json('{"count": 5}') == ExampleHParams(count=5)


@pytest.mark.parametrize(
    ("text", "expected_message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be an object"),
        ('{"cuont": 5}', "Unknown hparam 'cuont' in the hparams JSON. Did you mean count"),
        ('{"count": "5"}', "count expects an integer"),
        ('{"count": -5}', "count must be 0 or more"),
    ],
)
def test_bad_json_is_refused(text: str, expected_message: str) -> None:
    with pytest.raises(HParamsError, match=expected_message):
        ExampleHParams.from_json(text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_float_survives_override_and_json(value: float) -> None:
    hparams = ExampleHParams().override(f"rate={value!r}")
    assert hparams.rate == value
    assert ExampleHParams.from_json(hparams.to_json()).rate == value


@given(st.lists(st.integers(), max_size=6))
def test_any_int_list_survives_override(values: list[int]) -> None:
    spec = "sizes=[" + ",".join(str(v) for v in values) + "]"
    assert ExampleHParams().override(spec).sizes == tuple(values)


def test_field_help_reads_trailing_and_preceding_comments() -> None:
    comments = ExampleHParams.field_help()
    assert comments["count"] == "an integer"
    assert comments["names"] == "A comment above a field may take two lines."


def test_every_transformer_field_has_a_one_line_comment() -> None:
    for name, comment in TransformerHParams.field_help().items():
        assert comment, f"TransformerHParams.{name} has no comment"
        assert "\n" not in comment


def test_help_text_shows_type_default_and_meaning() -> None:
    text = TransformerHParams.help_text()
    assert "  d_model = 512 (int): Width of the embeddings" in text
    assert '  layer_norm_position = post (post|pre): "post": LayerNorm' in text
    assert len(text.splitlines()) == len(dataclasses.fields(TransformerHParams))


def test_untied_target_embeddings_need_separate_embeddings() -> None:
    with pytest.raises(HParamsError, match="tie_target_embeddings=false is not valid"):
        TransformerHParams(tie_target_embeddings=False)
    assert not TransformerHParams(
        shared_embeddings=False, tie_target_embeddings=False
    ).shared_embeddings


def test_a_target_vocabulary_of_its_own_size_needs_separate_embeddings() -> None:
    with pytest.raises(HParamsError, match="target_vocab_size=70 is not valid") as refused:
        TransformerHParams(vocab_size=16000, target_vocab_size=70)
    assert "set shared_embeddings=false" in str(refused.value)
    with pytest.raises(HParamsError, match="target_vocab_size=-1 is not valid"):
        TransformerHParams(target_vocab_size=-1, shared_embeddings=False)
    same = TransformerHParams(vocab_size=100, target_vocab_size=100)
    assert same.targets_vocab_size() == 100
    own = TransformerHParams().override(
        "vocab_size=16000,target_vocab_size=70,shared_embeddings=false"
    )
    assert (own.vocab_size, own.targets_vocab_size()) == (16000, 70)
    assert "target_vocab_size" in TransformerHParams.shape_fields


def test_hparams_json_without_target_vocab_size_means_what_it_meant() -> None:
    # hparams.json written before the field existed: 0, so the targets take vocab_size.
    old = TransformerHParams(vocab_size=300, shared_embeddings=False).values()
    del old["target_vocab_size"]
    loaded = TransformerHParams.from_json(json.dumps(old))
    assert loaded.target_vocab_size == 0 and loaded.targets_vocab_size() == 300
    for name in registry.list_hparams():
        assert registry.hparams(name).target_vocab_size == 0, name


def test_a_subclass_must_be_a_frozen_dataclass_with_defaults() -> None:
    class NotADataclass(HParams):
        size: int = 1

    with pytest.raises(TypeError, match="frozen=True"):
        NotADataclass()

    @dataclasses.dataclass(frozen=True)
    class NoDefault(HParams):
        size: int

    with pytest.raises(TypeError, match="needs a default"):
        NoDefault(size=1)


def test_unsupported_field_type_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithDict(HParams):
        table: dict = dataclasses.field(default_factory=dict)

    with pytest.raises(TypeError, match="Unsupported hparams field type"):
        WithDict()


def test_paper_values_are_the_defaults() -> None:
    hparams = TransformerHParams()
    assert (hparams.num_encoder_layers, hparams.d_model, hparams.d_ff) == (6, 512, 2048)
    assert (hparams.num_heads, hparams.d_k, hparams.d_v) == (8, 64, 64)
    assert (hparams.adam_beta1, hparams.adam_beta2, hparams.adam_epsilon) == (0.9, 0.98, 1e-9)
    assert hparams.layer_norm_position == "post" and hparams.position_encoding == "sinusoid"
    assert hparams.shared_embeddings and hparams.warmup_steps == 4000
    assert hparams.dropout == 0.1 and hparams.label_smoothing == 0.1
    assert (hparams.beam_size, hparams.alpha, hparams.extra_length) == (4, 0.6, 50)
    assert hparams.learning_rate_schedule == "paper" and hparams.learning_rate == 1.0


@pytest.mark.parametrize(
    ("spec", "ignored", "because"),
    [
        ("optimizer=adafactor,adam_beta2=0.997", "adam_beta2", "optimizer=adafactor"),
        ("adam_epsilon=1e-6,optimizer=adafactor", "adam_epsilon", "optimizer=adafactor"),
        ("learning_rate_schedule=constant,warmup_steps=100", "warmup_steps", "constant"),
    ],
)
def test_a_setting_the_configuration_ignores_is_refused(
    spec: str, ignored: str, because: str
) -> None:
    with pytest.raises(HParamsError, match=f"hparam {ignored} is set .* would be ignored") as error:
        TransformerHParams().override(spec)
    assert because in str(error.value)


def test_settings_that_take_effect_are_accepted() -> None:
    hparams = TransformerHParams().override(
        "optimizer=adam,adam_beta2=0.997,learning_rate_schedule=t2t,warmup_steps=100,"
        "shared_embeddings=false,tie_target_embeddings=false"
    )
    assert (hparams.adam_beta2, hparams.warmup_steps) == (0.997, 100)
    # Values the set already had are not the user's setting: switching optimizer is fine,
    # and so is restating a value.
    assert TransformerHParams().override("optimizer=adafactor").adam_beta2 == 0.98
    assert TransformerHParams().override("optimizer=adafactor,adam_beta2=0.98").adam_beta2 == 0.98


# Hostile override text: pieces of real overrides and of anything else, run together.
FIELD_NAMES = sorted({*TransformerHParams().values(), *DecodeHParams().values()})
OVERRIDE_PIECES = st.one_of(
    st.sampled_from(FIELD_NAMES),
    st.sampled_from([*"=,[]()'\" ", "\n", "\t", "\r", "\x00", "\u2028", "\x85", "\ufeff"]),
    st.sampled_from(["true", "no", "None", "inf", "nan", "1e999", "-0", ".5", "[1,2]", "post"]),
    st.sampled_from(["9" * 5000, "x" * 100_000, "[" * 1000, "\u0663", "\uff11"]),
    st.integers().map(str),
    st.floats().map(repr),
    st.text(max_size=6),
)
override_specs = st.lists(OVERRIDE_PIECES, max_size=12).map("".join)


@ci_budget(400, deadline=None)
@given(override_specs, st.sampled_from([TransformerHParams, DecodeHParams]))
@example("d_model=" + "9" * 5000, TransformerHParams)
@example("beam_size=1\n2", DecodeHParams)
@example("x" * 100_000 + "=1", DecodeHParams)
@example("stopping=first_k\x00", DecodeHParams)
def test_any_override_text_is_parsed_or_refused_in_one_line(
    spec: str, hparams_class: type[HParams]
) -> None:
    """Whatever --hparams or --decode_hparams holds: a value, or an HParamsError of one
    printable line of bounded length, never another exception."""
    try:
        hparams = hparams_class().override(spec)
    except HParamsError as error:
        message = str(error)
        assert message.isprintable(), message  # No line break, no control character.
        assert len(message) < 1500, message
        return
    assert hparams_class.from_json(hparams.to_json()) == hparams
    assert len(hparams.describe().splitlines()) == len(hparams.values())


def test_an_integer_of_too_many_digits_is_refused_in_overrides_and_json() -> None:
    with pytest.raises(HParamsError, match="d_model expects an integer, e.g. 512, not one of 5000"):
        TransformerHParams().override("d_model=" + "9" * 5000)
    with pytest.raises(HParamsError, match="hparams JSON is not valid JSON"):
        TransformerHParams.from_json('{"d_model": ' + "9" * 5000 + "}")
