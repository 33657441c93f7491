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


def _string_lists(path: Path) -> list[tuple[int, frozenset[str]]]:
    """(line, values) of each tuple, list or set literal of strings only in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and node.elts:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and all(isinstance(v, str) for v in values):
                found.append((node.lineno, frozenset(values)))
    return found


def test_each_list_of_values_is_written_once() -> None:
    """Only t2t_keras/modes.py spells out --xla's, --mixed_precision's and the
    strategies' values: binaries and library import them from there."""
    root = Path(__file__).resolve().parents[1]
    lists = {frozenset(values) for values in (XLA_MODES, PRECISIONS, STRATEGIES)}
    found = [
        f"{path.relative_to(root)}:{line}"
        for directory in ("t2t_keras", "bin", "problems", "hparams", "benchmarks")
        for path in sorted((root / directory).rglob("*.py"))
        for line, values in _string_lists(path)
        if values in lists
    ]
    assert sorted(found) == [
        "t2t_keras/modes.py:14",
        "t2t_keras/modes.py:23",
        "t2t_keras/modes.py:24",
    ]
