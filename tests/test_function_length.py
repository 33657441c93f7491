"""Short functions: none in the library, its binaries, problems or hparams sets
runs over 60 lines, `def` to last line, docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_TREES = ("t2t_keras", "bin", "problems", "hparams")
MAX_LINES = 60


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[tuple[str, int]]:
    """(qualified name, length) of each function longer than max_lines, in source order."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if length > max_lines:
                    found.append((name, length))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_check_finds_long_functions_methods_and_nested_ones() -> None:
    source = (
        "def short():\n"
        "    return 1\n"
        "class Model:\n"
        "    def call(self):\n"
        "        x = 1\n"
        "        x = 2\n"
        "        def inner():\n"
        "            y = 1\n"
        "            return y\n"
        "        return x\n"
    )
    assert long_functions(source, max_lines=6) == [("Model.call", 7)]
    assert long_functions(source, max_lines=2) == [("Model.call", 7), ("Model.call.inner", 3)]
    assert long_functions("def f():\n" + "    x = 1\n" * 59) == []
    assert long_functions("def f():\n" + "    x = 1\n" * 60) == [("f", 61)]


def test_no_library_function_is_over_60_lines() -> None:
    found = []
    for tree in SOURCE_TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            module = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
            found += [
                f"{module}:{name} ({length} lines)"
                for name, length in long_functions(path.read_text(encoding="utf-8"))
            ]
    assert not found, f"functions over {MAX_LINES} lines:\n" + "\n".join(found)
