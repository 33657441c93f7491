"""benchmarks/README.md lists every script with its command and every shared module as such;
every benchmarks/ script the docs name exists and takes the flags they give it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
SHARED_HEADING = "\n## Shared modules\n"


def index_sections() -> tuple[str, str]:
    """The README's text before its shared modules' heading, and from it on."""
    text = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    scripts, shared = text.split(SHARED_HEADING)
    return scripts, shared


def is_script(path: Path) -> bool:
    return 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")


def test_every_script_is_listed_with_its_command() -> None:
    scripts, _ = index_sections()
    for path in sorted(BENCHMARKS.glob("*.py")):
        if is_script(path):
            assert f"`.venv/bin/python benchmarks/{path.name}" in scripts, path.name


def test_every_shared_module_is_listed_as_shared() -> None:
    scripts, shared = index_sections()
    for path in sorted(BENCHMARKS.glob("*.py")):
        if not is_script(path):
            assert f"| `{path.name}` |" in shared, path.name
            assert f"benchmarks/{path.name}" not in scripts, path.name


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), BENCHMARKS / "README.md"]


def quoted_flags(text: str) -> list[tuple[str, str]]:
    """(script, flag name) of each flag written right after a `benchmarks/NAME.py`."""
    text = text.replace("\\\n", " ")
    found = []
    for match in re.finditer(r"(?<![\w/])benchmarks/(\w+\.py)", text):
        for word in text[match.end() :].split():
            flag = word.strip("[]`,;:()")
            if not flag.startswith("--"):
                break
            found.append((match[1], flag[2:].split("=", 1)[0]))
            if "`" in word:  # The end of the inline command.
                break
    return found


def defined_flags(script: Path) -> set[str]:
    """The flags `script` defines (absl or argparse), with the absl flags of what it imports here."""
    names: set[str] = set()
    modules, seen = [script], set()
    while modules:
        path = modules.pop()
        seen.add(path)
        # An imported module's argparse arguments are its own, not the script's.
        calls = ("DEFINE_", "add_argument") if path == script else ("DEFINE_",)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for imported in imported_here(node):
                if imported.exists() and imported not in seen:
                    modules.append(imported)
            names |= {flag_defined(node, calls)} - {""}
    return names


def imported_here(node: ast.AST) -> list[Path]:
    """The benchmarks/ modules an `import` or `from ... import` statement may name."""
    if isinstance(node, ast.ImportFrom) and node.module:
        return [BENCHMARKS / f"{node.module}.py"]
    if isinstance(node, ast.Import):
        return [BENCHMARKS / f"{alias.name}.py" for alias in node.names]
    return []


def flag_defined(node: ast.AST, calls: tuple[str, ...]) -> str:
    """The flag a call whose name starts with one of `calls` defines, else ""."""
    is_definition = isinstance(node, ast.Call) and getattr(node.func, "attr", "").startswith(calls)
    if is_definition and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value).removeprefix("--")
    return ""


def test_the_docs_give_each_benchmark_flags_it_takes() -> None:
    wrong = []
    for page in pages():
        for script, flag in quoted_flags(page.read_text(encoding="utf-8")):
            if not (BENCHMARKS / script).exists():
                continue  # test_every_benchmark_the_docs_name_exists says so.
            defined = defined_flags(BENCHMARKS / script)
            if flag not in defined and flag.removeprefix("no") not in defined:
                wrong.append(f"{page.relative_to(ROOT)}: {script} --{flag}")
    assert wrong == []


def test_every_benchmark_the_docs_name_exists() -> None:
    missing = [
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in pages()
        for name in re.findall(r"(?<![\w/])benchmarks/(\w+\.py)", doc.read_text(encoding="utf-8"))
        if not (BENCHMARKS / name).exists()
    ]
    index = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    missing += [
        name for name in re.findall(r"`(\w+\.py)`", index) if not (BENCHMARKS / name).exists()
    ]
    assert missing == []
