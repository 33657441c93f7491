"""benchmarks/README.md lists every script with its command and every shared module as such;
every benchmarks/ script the docs name exists and takes the flags they give it; every section
a script's "quoted in" cell links names the script."""

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


LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")


def quoted_in_cells(scripts_section: str) -> dict[str, str]:
    """{script: its "quoted in" cell} of each row of the index's scripts table."""
    cells = {}
    for line in scripts_section.splitlines():
        row = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(row) == 4 and (script := re.fullmatch(r"`(\w+\.py)`", row[0])):
            cells[script[1]] = row[3]
    return cells


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(page: Path) -> dict[str, str]:
    """{anchor: text up to the next ## heading} of each ## section of a Markdown page."""
    found: dict[str, str] = {}
    anchor, fenced = "", False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("## ") and not fenced:
            anchor = github_anchor(line[3:])
            found[anchor] = ""
        elif anchor:
            found[anchor] += line + "\n"
    return found


def misquoted(index: Path) -> list[str]:
    """What is wrong with the "quoted in" cells of `index` (a benchmarks/README.md): a row
    with no link, a linked page or section that does not exist, or a section that does not
    name `benchmarks/<script>`."""
    scripts, _ = index.read_text(encoding="utf-8").split(SHARED_HEADING)
    wrong = []
    for script, cell in quoted_in_cells(scripts).items():
        links = LINK.findall(cell)
        wrong += [f"{script}: its quoted-in cell links no page"] if not links else []
        for target, anchor in links:
            page, text = (index.parent / target).resolve(), None
            if page.exists():
                text = sections(page).get(anchor) if anchor else page.read_text(encoding="utf-8")
            if text is None:
                wrong.append(f"{script}: {target}#{anchor} does not exist")
            elif f"benchmarks/{script}" not in text:
                wrong.append(f"{script}: {target}#{anchor} does not name benchmarks/{script}")
    return wrong


def test_each_script_is_named_by_the_sections_that_quote_it() -> None:
    assert misquoted(BENCHMARKS / "README.md") == []


def test_a_section_that_does_not_name_its_script_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text(
        "# Results\n\n## Speed by model size\n\n`benchmarks/speed_table.py` runs...\n\n"
        "```sh\n## not a heading\n```\n\n## Where the search's time goes\n\nNo script named.\n"
    )
    index = tmp_path / "benchmarks" / "README.md"
    index.parent.mkdir()
    rows = [
        "| `speed_table.py` | q | c | [r](../docs/results.md#speed-by-model-size) |",
        "| `search_profile.py` | q | c | [r](../docs/results.md#where-the-searchs-time-goes) |",
        "| `peers.py` | q | c | [r](../docs/results.md#no-such-section) |",
        "| `avx2_host.py` | q | c | (not yet quoted) |",
    ]
    index.write_text("## Scripts\n\n" + "\n".join(rows) + "\n" + SHARED_HEADING + "\n")

    assert misquoted(index) == [
        "search_profile.py: ../docs/results.md#where-the-searchs-time-goes does not name "
        "benchmarks/search_profile.py",
        "peers.py: ../docs/results.md#no-such-section does not exist",
        "avx2_host.py: its quoted-in cell links no page",
    ]
