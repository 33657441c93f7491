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
            if "hparams" in argument.arg and _admits_anything(argument.annotation):
                annotation = ast.unparse(argument.annotation) if argument.annotation else "Any"
                found.append(f"{node.name}({argument.arg}: {annotation})")
    return found


def _admits_anything(annotation: ast.expr | None) -> bool:
    """No annotation, `Any`, or a union with `Any` as one of its members."""
    if annotation is None:
        return True
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _admits_anything(annotation.left) or _admits_anything(annotation.right)
    return isinstance(annotation, ast.Name | ast.Attribute) and ast.unparse(annotation).endswith(
        "Any"
    )


def test_the_check_finds_an_untyped_hparams() -> None:
    source = (
        "def train(hparams: Any, steps: int) -> None: ...\n"
        "def evaluate(model_hparams: HParams | Any) -> None: ...\n"
        "def untyped(hparams): ...\n"
        "def _private(hparams): ..."
    )
    assert hparams_parameters_typed_any(source) == [
        "train(hparams: Any)",
        "evaluate(model_hparams: HParams | Any)",
        "untyped(hparams: Any)",
    ]
    typed = "def f(hparams: TransformerHParams | dict[str, Any]) -> None: ..."
    assert hparams_parameters_typed_any(typed) == []
    assert hparams_parameters_typed_any("def f(hparams: TransformerHParams) -> None: ...") == []


def test_no_public_function_takes_hparams_as_any() -> None:
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        found += [
            f"{path.relative_to(LIBRARY)}: {where}"
            for where in hparams_parameters_typed_any(path.read_text(encoding="utf-8"))
        ]
    assert not found, "hparams typed Any:\n" + "\n".join(found)
