"""Running the t2t-* commands in tests, and checking their errors.

`run` starts the installed console script: the real thing, a new process
that imports TensorFlow. `run_in_process` calls the same program through
absl's flag parsing inside the test process, where TensorFlow is loaded
already: for flag and error cases, which need no process of their own.
Both return a subprocess.CompletedProcess.

Importable from every test module: pyproject.toml puts tests/ on the path.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from absl import flags
from absl import logging as absl_logging

from t2t_keras.bin import flag_groups


def script(binary: str) -> Path:
    """The console script of this environment, e.g. .venv/bin/t2t-decoder."""
    path = Path(sys.executable).parent / binary
    assert path.exists(), f"{binary} is not installed next to {sys.executable}"
    return path


def run(
    binary: str,
    *args: str,
    stdin: str | None = None,
    timeout: int = 300,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Runs an installed console script (in `env` if given); its output is captured as text."""
    return subprocess.run(
        [str(script(binary)), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        env=env,
    )


def run_in_process(binary: str, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """Runs a t2t-* program in this process: flags parsed afresh, output captured as text.

    Args:
      binary: the command's name, e.g. "t2t-decoder".
      args: its command-line arguments.
      stdin: what the program reads from standard input.

    Returns:
      The exit status (0 when the program returns normally) with stdout and stderr.
    """
    module = _fresh_binary(binary)
    argv = [binary, *args]
    stdout, stderr = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with _program_io(argv, stdin, stdout, stderr):
        try:
            module.run()
        except SystemExit as exit_request:
            code = exit_request.code
    if isinstance(code, str):  # sys.exit("message") prints it and exits with 1.
        stderr.write(code + "\n")
        code = 1
    return subprocess.CompletedProcess(argv, code or 0, stdout.getvalue(), stderr.getvalue())


def _fresh_binary(binary: str) -> types.ModuleType:
    """Imports the binary's module anew, with only its own flags defined, all unparsed.

    absl holds every flag in one process-wide FlagValues, and the binaries
    define flags of the same names, so the previous binary's flags go first.
    """
    module = flag_groups.load_binary(binary)
    flags.FLAGS.unparse_flags()
    flags.FLAGS.verbosity = absl_logging.INFO  # What absl's first app.run sets.
    return module


@contextlib.contextmanager
def _program_io(
    argv: list[str], stdin: bytes, stdout: io.StringIO, stderr: io.StringIO
) -> Iterator[None]:
    """sys.argv, the standard streams and absl's log stream, replaced meanwhile."""
    main_doc = sys.modules["__main__"].__doc__
    saved_argv, saved_stdin = sys.argv, sys.stdin
    log_handler = absl_logging.get_absl_handler().python_handler
    sys.argv = argv
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    saved_log_stream = log_handler.setStream(stderr)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            yield
    finally:
        log_handler.setStream(saved_log_stream)
        sys.argv, sys.stdin = saved_argv, saved_stdin
        sys.modules["__main__"].__doc__ = main_doc


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
