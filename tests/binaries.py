"""Running the installed t2t-* commands in tests, and checking their errors.

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def script(binary: str) -> Path:
    """The console script of this environment, e.g. .venv/bin/t2t-decoder."""
    path = Path(sys.executable).parent / binary
    assert path.exists(), f"{binary} is not installed next to {sys.executable}"
    return path


def run(
    binary: str, *args: str, stdin: str | None = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    """Runs an installed console script; its output is captured as text."""
    return subprocess.run(
        [str(script(binary)), *args], capture_output=True, text=True, timeout=timeout, input=stdin
    )


def assert_user_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 2, one paragraph on stderr naming the problem, no traceback.

    TensorFlow may print start-up lines of its own before; the program's
    message is the last line, a single paragraph.
    """
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(f"{Path(result.args[0]).name}: error: "), result.stderr
    for fragment in fragments:
        assert fragment in message, message
