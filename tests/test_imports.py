"""Imports only go down the layers of the package, and never in a circle.

Every `import` and `from ... import` of the library, the catalog and the
binaries is read from the source (function-level imports included), resolved
to the module it loads, and checked against LAYERS. `pytest -s` prints each
import checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where each installed package's source lies (setup.py maps the last three).
SOURCES = {
    "t2t_keras": ROOT / "t2t_keras",
    "t2t_keras.problems": ROOT / "problems",
    "t2t_keras.hparams": ROOT / "hparams",
    "t2t_keras.bin": ROOT / "bin",
}
# Bottom first. A module may import from a lower layer, or from its own
# package within its layer; never from a higher layer or a sibling package.
LAYERS = (
    ("t2t_keras.errors",),
    (
        "t2t_keras.files",
        "t2t_keras.hparam",
        "t2t_keras.machine",
        "t2t_keras.modes",
        "t2t_keras.termination",
        "t2t_keras.usr_dir",
    ),
    ("t2t_keras.registry",),
    ("t2t_keras.data",),
    ("t2t_keras.layers",),
    ("t2t_keras.models",),
    ("t2t_keras.metrics", "t2t_keras.run"),
    ("t2t_keras.search",),
    ("t2t_keras.serving",),
    ("t2t_keras.export", "t2t_keras.importing"),
    ("t2t_keras.server",),
    ("t2t_keras.training",),
    ("t2t_keras.benchmark",),
    ("t2t_keras.problems", "t2t_keras.hparams"),
    ("t2t_keras.catalog",),
    ("t2t_keras.bin",),
)


def source_modules() -> dict[str, Path]:
    """Every module of the installed package, by dotted name."""
    modules = {}
    for package, directory in SOURCES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = path.relative_to(directory).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            modules[".".join((package, *parts))] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, module) for each t2t_keras module that `name`'s source imports."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import module` imports the module; other names, the package.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        found += [(node.lineno, target) for target in targets if target in known]
    return found


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, the top package of the layer entry) holding `module`."""
    for index, entries in enumerate(LAYERS):
        for entry in entries:
            if module == entry or module.startswith(entry + "."):
                return index, entry
    if module == "t2t_keras":
        return len(LAYERS), module  # The package itself stands above everything.
    raise AssertionError(f"{module} is in no layer of tests/test_imports.py; add it to LAYERS")


def import_graph() -> dict[str, list[tuple[int, str]]]:
    modules = source_modules()
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def test_the_package_is_read() -> None:
    graph = import_graph()
    assert len(graph) > 60
    assert ("t2t_keras.run.loading", "t2t_keras.run.weights") in {
        (name, target) for name, targets in graph.items() for _, target in targets
    }


def test_imports_only_go_down() -> None:
    graph = import_graph()
    upward = []
    for name, targets in sorted(graph.items()):
        here, package = layer_of(name)
        for line, target in targets:
            there, target_package = layer_of(target)
            ok = there < here or (there == here and target_package == package)
            print(f"{'ok' if ok else 'UP'}  {name}:{line} -> {target}")
            if not ok:
                upward.append(f"{name}:{line} imports {target}")
    assert not upward, "imports that go up or sideways:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    graph = {
        name: sorted({target for _, target in targets}) for name, targets in import_graph().items()
    }
    circles = []
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in graph.get(name, []):
            if state.get(target) == "open":
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(circles)


@pytest.mark.parametrize(
    ("module", "target", "expected"),
    [
        ("t2t_keras.data.problem", "t2t_keras.registry", True),
        ("t2t_keras.registry", "t2t_keras.data.problem", False),
        ("t2t_keras.run.loading", "t2t_keras.training.checkpoints", False),
        ("t2t_keras.layers.attention", "t2t_keras.metrics.bleu", False),
        ("t2t_keras.training.trainer", "t2t_keras.serving.translator", True),
    ],
)
def test_the_rule_itself(module: str, target: str, expected: bool) -> None:
    (here, package), (there, target_package) = layer_of(module), layer_of(target)
    assert (there < here or (there == here and target_package == package)) is expected
