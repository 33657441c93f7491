"""Typed hyperparameters: frozen dataclasses with string overrides and JSON.

An hparams class is a frozen dataclass deriving from `HParams`. Every field
has a type, a default and a one-line comment, which become the help text:

    @dataclasses.dataclass(frozen=True)
    class MyHParams(HParams):
        num_heads: int = 8  # attention heads per layer
        layer_sizes: tuple[int, ...] = (512, 512)  # width of each layer

    MyHParams().override("num_heads=4,layer_sizes=[256,128]")

Supported field types: bool, int, float, str, `Literal[...]` of strings,
`tuple[X, ...]` of those, and `X | None`.

Any override text is either parsed or refused with an `HParamsError` of one
line, whatever it holds (line breaks, control characters, 100,000
characters): the text it quotes is escaped and cut to `_SHOWN_CHARACTERS`.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import inspect
import io
import json
import math
import re
import textwrap
import tokenize
import types
import typing
from typing import Any, Literal, TypeVar

from t2t_keras.errors import UserError

H = TypeVar("H", bound="HParams")

_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")
_NONE = ("none", "null")
_FLOAT = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?"
# The most characters of a user's text that an error message quotes.
_SHOWN_CHARACTERS = 80


class HParamsError(UserError, ValueError):
    """An override string, a JSON text or a value that does not fit the fields."""


@dataclasses.dataclass(frozen=True)
class HParams:
    """Base of every hparams class: typed, immutable, overridable, serializable."""

    def __post_init__(self) -> None:
        for name, annotation in _field_types(type(self)).items():
            value = _check_value(getattr(self, name), annotation, name)
            object.__setattr__(self, name, value)
        self.validate()

    def validate(self) -> None:
        """Checks ranges and relations between fields; subclasses extend it."""

    def ignored_fields(self) -> dict[str, str]:
        """Fields these values make meaningless, each with why; subclasses say which.

        `override` refuses to change one of them: a setting that would be
        silently ignored is a mistake the user should hear about.
        """
        return {}

    def require(self, condition: bool, name: str, expected: str) -> None:
        """Raises HParamsError about field `name` unless `condition` holds."""
        if not condition:
            value = _shown(_format_value(getattr(self, name)))
            raise HParamsError(f"hparam {name}={value} is not valid: {name} must be {expected}.")

    def override(self: H, spec: str) -> H:
        """Returns a copy with the overrides "name=value,name=value" applied.

        Values are parsed to each field's type: `true`/`false` for bools,
        `[1,2]` for tuples, `None` for optional fields.
        """
        types_by_name = _field_types(type(self))
        changes: dict[str, Any] = {}
        for item in [item for item in _split_top_level(spec, spec) if item.strip()]:
            name, sep, text = item.partition("=")
            name = name.strip()
            if not sep or not name:
                raise HParamsError(
                    f"Malformed hparams override {_quoted(item)} in {_quoted(spec)}: each item "
                    "must be name=value, items separated by commas "
                    '(e.g. "num_heads=4,dropout=0.2,layer_sizes=[1,2]").'
                )
            if name not in types_by_name:
                raise _unknown_field_error(type(self), name, f"in {_quoted(spec)}")
            if name in changes:
                raise HParamsError(f"hparam {name!r} is set twice in {_quoted(spec)}.")
            changes[name] = _parse_text(text.strip(), types_by_name[name], name)
        result = dataclasses.replace(self, **changes)
        ignored = result.ignored_fields()
        for name in changes:
            if name in ignored and getattr(result, name) != getattr(self, name):
                raise HParamsError(
                    f"hparam {name} is set in {_quoted(spec)} but would be ignored: {ignored[name]}. "
                    f"Drop {name}, or change the setting that makes it unused."
                )
        return result

    def values(self) -> dict[str, Any]:
        """The fields as a plain dict, tuples as lists (JSON-ready)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def to_json(self) -> str:
        """The JSON text that `from_json` reads back (what hparams.json holds)."""
        return json.dumps(self.values(), indent=2) + "\n"

    @classmethod
    def from_json(cls: type[H], text: str) -> H:
        """Reads `to_json` output; fields missing from the text keep defaults."""
        try:
            data = json.loads(text)
        except ValueError as error:  # Not JSON, or an integer of too many digits.
            raise HParamsError(f"hparams JSON is not valid JSON: {error}.") from None
        if not isinstance(data, dict):
            raise HParamsError(
                "hparams JSON must be an object mapping field names to values, "
                f"got {type(data).__name__}."
            )
        for name in data:
            if name not in _field_types(cls):
                raise _unknown_field_error(cls, name, "in the hparams JSON")
        return cls(**data)

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Each field's one-line comment, from the class source."""
        return dict(_field_comments(cls))

    @classmethod
    def help_text(cls) -> str:
        """One line per field: name, type, default and meaning."""
        return cls().describe()

    def fields(self) -> list[tuple[str, str, str, str]]:
        """(name, value as an override writes it, type, comment) of each field, in order."""
        comments = _field_comments(type(self))
        return [
            (name, _format_value(getattr(self, name)), _type_name(annotation), comments[name])
            for name, annotation in _field_types(type(self)).items()
        ]

    def describe(self) -> str:
        """One line per field: name, this instance's value, type and meaning."""
        return "\n".join(
            f"  {name} = {value} ({kind}): {comment}"
            for name, value, kind, comment in self.fields()
        )


# Field types and comments, read once per class.

_FIELD_TYPES: dict[type, dict[str, Any]] = {}
_FIELD_COMMENTS: dict[type, dict[str, str]] = {}


def _field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation (computed once per class)."""
    if cls not in _FIELD_TYPES:
        _FIELD_TYPES[cls] = _read_field_types(cls)
    return _FIELD_TYPES[cls]


def _read_field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation; checks the class is well formed."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__dataclass_fields__" not in vars(cls):
        raise TypeError(
            f"{cls.__name__} must be decorated with @dataclasses.dataclass(frozen=True)."
        )
    hints = typing.get_type_hints(cls)
    result = {}
    for field in dataclasses.fields(cls):
        if field.default is dataclasses.MISSING and (field.default_factory is dataclasses.MISSING):
            raise TypeError(f"{cls.__name__}.{field.name} needs a default value.")
        _type_name(hints[field.name])  # Raises on unsupported annotations.
        result[field.name] = hints[field.name]
    return result


def _field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment (computed once per class)."""
    if cls not in _FIELD_COMMENTS:
        _FIELD_COMMENTS[cls] = _read_field_comments(cls)
    return _FIELD_COMMENTS[cls]


def _read_field_comments(cls: type) -> dict[str, str]:
    """Field name -> its comment, trailing or on the lines just above it."""
    comments: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):  # No source, e.g. defined in a REPL.
            continue
        comments.update({k: v for k, v in _comments_in_class_source(source).items() if v})
    return {f.name: comments.get(f.name, "") for f in dataclasses.fields(cls)}


def _comments_in_class_source(source: str) -> dict[str, str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    trailing: dict[int, str] = {}
    standalone: dict[int, str] = {}
    for token in tokens:
        if token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            own_line = token.line.strip().startswith("#")
            (standalone if own_line else trailing)[token.start[0]] = text
    class_node = ast.parse(source).body[0]
    comments = {}
    for node in getattr(class_node, "body", []):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text = trailing.get(node.end_lineno or node.lineno, "")
            if not text:  # A comment block right above the field.
                above: list[str] = []
                line = node.lineno - 1
                while line in standalone:
                    above.insert(0, standalone[line])
                    line -= 1
                text = " ".join(above)
            comments[node.target.id] = text
    return comments


def _type_name(annotation: Any) -> str:
    """Short name of a supported annotation; raises TypeError otherwise."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in (bool, int, float, str):
        return annotation.__name__
    if origin is Literal:
        return "|".join(str(choice) for choice in args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"list of {_type_name(args[0])}"
    if _optional_inner(annotation) is not None:
        return f"{_type_name(_optional_inner(annotation))} or None"
    raise TypeError(f"Unsupported hparams field type {annotation!r}.")


def _optional_inner(annotation: Any) -> Any:
    """X for `X | None` / `Optional[X]`, else None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0]
    return None


# Values: checking Python values, parsing override text, formatting.


def _check_value(value: Any, annotation: Any, name: str) -> Any:
    """Returns `value` converted to the field's type, or raises HParamsError."""
    inner = _optional_inner(annotation)
    if inner is not None:
        return None if value is None else _check_value(value, inner, name)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    ok = False
    if annotation is bool:
        ok = isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
        value = float(value) if ok else value
    elif annotation is str:
        ok = isinstance(value, str)
    elif origin is Literal:
        ok = isinstance(value, str) and value in args
    elif origin is tuple and isinstance(value, (list, tuple)):
        return tuple(_check_value(item, args[0], name) for item in value)
    if not ok:
        raise _bad_value_error(name, _format_value(value), annotation)
    return value


def _parse_text(text: str, annotation: Any, name: str) -> Any:
    """Parses an override's value text to the field's type."""
    inner = _optional_inner(annotation)
    if inner is not None:
        if text.lower() in _NONE:
            return None
        try:
            return _parse_text(text, inner, name)
        except HParamsError:
            raise _bad_value_error(name, text, annotation) from None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is bool and text.lower() in _TRUE + _FALSE:
        return text.lower() in _TRUE
    if annotation is int and re.fullmatch(r"[+-]?[0-9]+", text):
        try:
            return int(text)
        except ValueError:  # More digits than Python converts (sys.get_int_max_str_digits).
            raise HParamsError(
                f"hparam {name}={_shown(text)} is not valid: {name} expects an integer, "
                f"e.g. 512, not one of {len(text.lstrip('+-'))} digits."
            ) from None
    if annotation is float and re.fullmatch(_FLOAT, text, flags=re.IGNORECASE):
        return float(text)
    elif annotation is str or origin is Literal:
        return _unquote(text)
    elif origin is tuple and text[:1] in "[(" and text[-1:] in "])" and text:
        items = [item.strip() for item in _split_top_level(text[1:-1], text)]
        if items == [""]:
            return ()
        if "" in items:
            raise HParamsError(f"hparam {name}={text} is not valid: the list has an empty item.")
        return tuple(_parse_text(item, args[0], name) for item in items)
    raise _bad_value_error(name, text, annotation)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_top_level(text: str, whole: str) -> list[str]:
    """Splits on commas outside brackets and quotes; keeps empty items.

    A quote only opens at the start of a value, so `label=it's` is plain text.
    """
    items, open_brackets, quote, start, previous = [], [], "", 0, ","
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"" and previous in "=,[(":
            quote = char
        elif char in "[(":
            open_brackets.append("])"["[(".index(char)])
        elif char in "])":
            if not open_brackets or open_brackets.pop() != char:
                raise _unbalanced(whole)
        elif char == "," and not open_brackets:
            items.append(text[start:index])
            start = index + 1
        previous = char if not char.isspace() else previous
    if open_brackets or quote:
        raise _unbalanced(whole)
    items.append(text[start:])
    return items


def _unbalanced(whole: str) -> HParamsError:
    return HParamsError(
        f"Unbalanced brackets or quotes in hparams {_quoted(whole)}: lists are written [1,2] "
        "and text holding commas or brackets is quoted, e.g. label='a,b'."
    )


def _format_value(value: Any) -> str:
    """A value written the way an override would write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_format_value(item) for item in value) + "]"
    if isinstance(value, str) and (not value or re.search(r"[,\[\]()'\"]|^\s|\s$", value)):
        quote = "'" if '"' in value else '"'
        return f"{quote}{value}{quote}"
    return str(value)


def _shown(text: str) -> str:
    """User text as an error message quotes it: on one line, escaped, cut if long."""
    escaped = text if text.isprintable() else repr(text)[1:-1]
    if len(escaped) <= _SHOWN_CHARACTERS:
        return escaped
    return f"{escaped[:_SHOWN_CHARACTERS]}... ({len(text)} characters)"


def _quoted(text: str) -> str:
    """User text in quotes, escaped as repr() writes it, cut if long."""
    if len(text) <= _SHOWN_CHARACTERS:
        return repr(text)
    return f"{text[:_SHOWN_CHARACTERS]!r}... ({len(text)} characters)"


def _bad_value_error(name: str, text: str, annotation: Any) -> HParamsError:
    return HParamsError(
        f"hparam {name}={_shown(text)} is not valid: {name} expects {_expected(annotation)}."
    )


def _expected(annotation: Any) -> str:
    """What a value of this type looks like, for error messages."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if _optional_inner(annotation) is not None:
        return f"{_expected(_optional_inner(annotation))}, or None"
    if origin is Literal:
        return "one of " + ", ".join(str(choice) for choice in args)
    if origin is tuple:
        return f"a list of {_type_name(args[0])} in brackets, e.g. [1,2]"
    examples = {
        bool: "true or false",
        int: "an integer, e.g. 512",
        float: "a finite number, e.g. 0.1",
    }
    return examples.get(annotation, "text")


def _unknown_field_error(cls: type, name: str, where: str) -> HParamsError:
    names = list(_field_types(cls))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return HParamsError(
        f"Unknown hparam {_quoted(name)} {where}.{hint} {cls.__name__} has the fields: "
        f"{', '.join(names)}."
    )
