"""--xla's modes: one list of values, one meaning in every binary and the library."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from t2t_keras.errors import UserError
from t2t_keras.modes import PRECISIONS, STRATEGIES, XLA_MODES, Xla


@pytest.mark.parametrize(
    ("mode", "attention", "search", "step"),
    [("off", False, False, False), ("attention", True, False, False), ("full", True, True, True)],
)
def test_what_each_mode_compiles(mode: str, attention: bool, search: bool, step: bool) -> None:
    xla = Xla(mode)
    assert (xla.compiles_attention, xla.compiles_whole_search, xla.compiles_whole_step) == (
        attention,
        search,
        step,
    )


def test_an_unknown_mode_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(UserError, match="--xla=jit is not an XLA mode; accepted: off, attention"):
        Xla("jit")
    assert XLA_MODES == ("off", "attention", "full")


ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("t2t_keras", "bin", "problems", "hparams")


def _strings(node: ast.AST) -> frozenset[str] | None:
    """The values of a tuple, list or set literal of two or more strings, else None."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
        values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(values) == len(node.elts) and all(isinstance(v, str) for v in values):
            return frozenset(values)
    return None


def _value_lists(tree: ast.Module) -> set[frozenset[str]]:
    """The lists of accepted values a module defines: its public ALL_CAPS string
    tuples, and the values of the enum flags it defines."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_")
            for t in node.targets
        ):
            found.add(_strings(node.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("DEFINE_")
            and "enum" in node.func.attr
            and len(node.args) >= 3
        ):
            found.add(_strings(node.args[2]))
    return found - {None}  # type: ignore[arg-type]


def duplicated_value_lists(
    sources: dict[str, str], scripts: tuple[str, ...] = ()
) -> dict[frozenset[str], list[str]]:
    """Each list of accepted values spelled out in more than one module, with those modules.

    Args:
      sources: each module's text, by path.
      scripts: path prefixes of modules that may restate a list but define none
        (the benchmarks' flags offer subsets of the binaries' values).
    """
    trees = {name: ast.parse(text) for name, text in sources.items()}
    defined = set().union(
        *(_value_lists(tree) for name, tree in trees.items() if not name.startswith(scripts))
    )
    spelled: dict[frozenset[str], list[str]] = {values: [] for values in defined}
    for name, tree in trees.items():
        for values in {_strings(node) for node in ast.walk(tree)} & defined:
            spelled[values].append(name)
    return {values: names for values, names in spelled.items() if len(names) > 1}


def test_each_list_of_values_is_written_once() -> None:
    """A flag's accepted values (--xla's, --mixed_precision's, --strategy's,
    --data_source's, the search's stopping rules ...) are spelled out in one module;
    binaries and library import them from there."""
    sources = {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for directory in (*LIBRARY, "benchmarks")
        for path in sorted((ROOT / directory).rglob("*.py"))
    }
    assert duplicated_value_lists(sources, scripts=("benchmarks/",)) == {}
    assert {frozenset(XLA_MODES), frozenset(PRECISIONS), frozenset(STRATEGIES)} <= set().union(
        *(_value_lists(ast.parse(text)) for text in sources.values())
    )


def test_a_list_written_twice_is_found() -> None:
    sources = {
        "modes.py": 'XLA_MODES = ("off", "attention", "full")',
        "bin.py": 'flags.DEFINE_enum("xla", "off", ["full", "off", "attention"], "help")',
        "one.py": 'FEATURES = ("inputs", "targets")\nfor side in ("inputs", "targets"): pass',
        "private.py": '_SIDES = ("a", "b")',
        "other.py": 'x = ("a", "b")',
    }
    assert duplicated_value_lists(sources) == {frozenset(XLA_MODES): ["modes.py", "bin.py"]}
