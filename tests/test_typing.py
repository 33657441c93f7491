"""Typed boundaries: no public function of the library takes its hparams as `Any`."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "t2t_keras"


def hparams_parameters_typed_any(source: str) -> list[str]:
    """'function(parameter)' for each public function's hparams-like parameter typed Any."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.name.startswith("_") and node.name != "__init__":
            continue
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        for argument in arguments:
            annotation = ast.unparse(argument.annotation) if argument.annotation else "Any"
            if "hparams" in argument.arg and "Any" in annotation:
                found.append(f"{node.name}({argument.arg}: {annotation})")
    return found


def test_the_check_finds_an_untyped_hparams() -> None:
    source = "def train(hparams: Any, steps: int) -> None: ...\ndef _private(hparams): ..."
    assert hparams_parameters_typed_any(source) == ["train(hparams: Any)"]
    assert hparams_parameters_typed_any("def f(hparams: TransformerHParams) -> None: ...") == []


def test_no_public_function_takes_hparams_as_any() -> None:
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        found += [
            f"{path.relative_to(LIBRARY)}: {where}"
            for where in hparams_parameters_typed_any(path.read_text(encoding="utf-8"))
        ]
    assert not found, "hparams typed Any:\n" + "\n".join(found)
