"""Names -> problems, hparams sets and models; importing a user's own package.

    @registry.register_problem            # name: my_corpus
    class MyCorpus(Text2TextProblem): ...

    @registry.register_hparams("my_set")  # an explicit name
    def my_hparams_function() -> HParams: ...

    registry.problem("my_corpus")          # an instance
    registry.hparams("transformer_base")   # an HParams
    registry.model("transformer")          # the class

The registry is machinery only and registers nothing itself: the built-in
catalog (`t2t_keras.problems`, `t2t_keras.hparams`, `t2t_keras.models`) is
loaded by `t2t_keras.catalog.load()`, which the t2t-* commands call first;
`import_usr_dir` adds a user's registrations.
"""

from __future__ import annotations

import difflib
import inspect
import re
import types
from collections.abc import Callable
from typing import Any, TypeVar

from t2t_keras import usr_dir as usr_dir_loader
from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams
from t2t_keras.usr_dir import UsrDirError, error_location

T = TypeVar("T")


class RegistryError(UserError):
    """Base of the errors below."""


class UnknownNameError(RegistryError, LookupError):
    """No entry has the asked-for name."""


class DuplicateNameError(RegistryError, ValueError):
    """The name is registered already."""


class RegistrationTypeError(RegistryError, TypeError):
    """The object is not of the kind that the registry holds."""


def default_name(obj: Any) -> str:
    """Snake case of a class or function name: `TranslateEndeWmt32k` -> `translate_ende_wmt32k`."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", obj.__name__)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return re.sub(r"__+", "_", name)


class _Registry:
    """One kind of entry: a name -> object map that refuses mistakes."""

    def __init__(
        self,
        kind: str,
        plural: str,
        check: Callable[[Any], str],
        name_attribute: str | None = None,
    ) -> None:
        self.kind = kind
        self.plural = plural
        self._check = check  # Returns "" for an acceptable object, else why not.
        self._name_attribute = name_attribute  # Set on the object to its registered name.
        self.entries: dict[str, Any] = {}

    def register(self, obj: T, name: str | None = None) -> T:
        problem = self._check(obj)
        if problem:
            raise RegistrationTypeError(f"Cannot register {obj!r} as a {self.kind}: {problem}.")
        if name is None:
            name = default_name(obj) if hasattr(obj, "__name__") else ""
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise RegistrationTypeError(
                f"Cannot register {obj!r} as a {self.kind} named {name!r}: names are "
                "lowercase letters, digits and underscores, starting with a letter; "
                f'give one explicitly, e.g. @register_{self.kind.split()[0]}("my_name").'
            )
        if name in self.entries:
            raise DuplicateNameError(
                f"{self.kind.capitalize()} {name!r} is already registered "
                f"(by {_origin(self.entries[name])}); pick another name, e.g. with "
                f'@register_{self.kind.split()[0]}("my_name").'
            )
        other = next((known for known, entry in self.entries.items() if entry is obj), None)
        if other is not None:
            raise DuplicateNameError(
                f"{_origin(obj)} is already registered as {self.kind} {other!r}; one object "
                "has one name: register a subclass under the other name."
            )
        self.entries[name] = obj
        if self._name_attribute:
            setattr(obj, self._name_attribute, name)
        return obj

    def get(self, name: str) -> Any:
        if name in self.entries:
            return self.entries[name]
        close = difflib.get_close_matches(name, self.entries, n=5, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        if not self.entries:
            raise UnknownNameError(
                f"Unknown {self.kind} {name!r}: no {self.plural} are registered yet. Call "
                "t2t_keras.catalog.load() first (the t2t-* commands do), which registers "
                "the built-in catalog and, with usr_dir=DIR, your own."
            )
        raise UnknownNameError(
            f"Unknown {self.kind} {name!r}.{hint} {len(self.entries)} {self.plural} are "
            "registered (--registry_help lists them); --t2t_usr_dir=DIR adds your own."
        )

    def names(self) -> list[str]:
        return sorted(self.entries)


def _origin(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"


# Checked by name: the registry sits below the data package that defines it.
_PROBLEM_BASE = "t2t_keras.data.problem.Problem"


def _check_problem(obj: Any) -> str:
    bases = getattr(obj, "__mro__", ()) if inspect.isclass(obj) else ()
    if not any(f"{base.__module__}.{base.__qualname__}" == _PROBLEM_BASE for base in bases):
        return "a problem must be a subclass of t2t_keras.data.Problem"
    return ""


def _check_hparams_function(obj: Any) -> str:
    if inspect.isclass(obj) or not callable(obj):
        return "an hparams set must be a function that returns an HParams"
    try:
        inspect.signature(obj).bind()
    except TypeError:
        return "an hparams set function must take no arguments"
    return ""


def _check_model(obj: Any) -> str:
    import keras  # Here, not at the top: reading the registry needs no TensorFlow.

    if not (inspect.isclass(obj) and issubclass(obj, keras.Model)):
        return "a model must be a subclass of keras.Model"
    return ""


_PROBLEMS = _Registry("problem", "problems", _check_problem, name_attribute="data_name")
_HPARAMS = _Registry("hparams set", "hparams sets", _check_hparams_function)
_MODELS = _Registry("model", "models", _check_model)
_ALL = (_PROBLEMS, _HPARAMS, _MODELS)


def _decorator(registry: _Registry, obj: Any, name: str | None) -> Any:
    if isinstance(obj, str):  # @register_x("name")
        obj, name = None, obj
    if obj is None:
        return lambda target: registry.register(target, name)
    return registry.register(obj, name)


def register_problem(obj: Any = None, *, name: str | None = None) -> Any:
    """Registers a Problem subclass: `@register_problem` or `@register_problem("name")`."""
    return _decorator(_PROBLEMS, obj, name)


def register_hparams(obj: Any = None, *, name: str | None = None) -> Any:
    """Registers a function returning an HParams: `@register_hparams` or `("name")`."""
    return _decorator(_HPARAMS, obj, name)


def register_model(obj: Any = None, *, name: str | None = None) -> Any:
    """Registers a keras.Model subclass: `@register_model` or `@register_model("name")`."""
    return _decorator(_MODELS, obj, name)


def problem(name: str) -> Any:
    """A new instance of the named problem; `<name>_rev` swaps inputs and targets."""
    forward = name.removesuffix("_rev")
    if name not in _PROBLEMS.entries and forward != name and forward in _PROBLEMS.entries:
        return _build("problem", name, _PROBLEMS.get(forward), was_reversed=True)
    return _build("problem", name, _PROBLEMS.get(name))


def hparams(name: str) -> HParams:
    """The named hparams set, freshly built."""
    function = _HPARAMS.get(name)
    result = _build("hparams set", name, function)
    if not isinstance(result, HParams):
        raise RegistrationTypeError(
            f"hparams set {name!r} ({_origin(function)}) returned "
            f"{type(result).__name__}; it must return an HParams instance."
        )
    return result


def _build(kind: str, name: str, factory: Callable[..., T], **kwargs: Any) -> T:
    """Calls a registered factory; its errors are reported with where it lives."""
    try:
        return factory(**kwargs)
    except Exception as error:
        source = inspect.getsourcefile(factory) or ""
        where = error_location(error, source) if source else ""
        raise RegistryError(
            f"Building {kind} {name!r} ({_origin(factory)}) failed with "
            f"{type(error).__name__}: {error}{where}."
        ) from error


def model(name: str) -> type:
    """The named model class."""
    return _MODELS.get(name)


def list_problems() -> list[str]:
    return _PROBLEMS.names()


def list_hparams() -> list[str]:
    return _HPARAMS.names()


def list_models() -> list[str]:
    return _MODELS.names()


def help_string() -> str:
    """Every registered name with the first line of its docstring."""
    sections = []
    for registry in (_PROBLEMS, _MODELS, _HPARAMS):
        title = f"{registry.plural.capitalize()} ({len(registry.entries)}):"
        width = max((len(name) for name in registry.entries), default=0)
        rows = [
            f"  {name:<{width}}  {_summary(registry.entries[name])}".rstrip()
            for name in registry.names()
        ]
        sections.append("\n".join([title, *(rows or ["  (none)"])]))
    return "\n\n".join(sections) + "\n"


def _summary(obj: Any) -> str:
    lines = (inspect.getdoc(obj) or "").strip().splitlines()
    return lines[0] if lines else ""


def _snapshot() -> list[dict[str, Any]]:
    return [dict(registry.entries) for registry in _ALL]


def _restore(snapshot: list[dict[str, Any]]) -> None:
    for registry, entries in zip(_ALL, snapshot, strict=True):
        registry.entries = dict(entries)


def import_usr_dir(usr_dir: str) -> types.ModuleType:
    """Imports the user's package at `usr_dir` so that its registrations count.

    `usr_dir` is a directory holding an `__init__.py` that imports the modules
    which register the user's problems, hparams sets and models. It is imported
    under its directory name; importing the same directory again does nothing.
    If the import fails, the registrations it made are undone.

    Raises:
      UsrDirError: the path is missing, not a package, clashes with another
        module, or its code raised (the message names the original error).
    """
    snapshot = _snapshot()
    try:
        return usr_dir_loader.load_package(usr_dir)
    except UsrDirError:
        _restore(snapshot)
        raise
