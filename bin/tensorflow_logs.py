"""Keeping TensorFlow's C++ start-up notices off the terminal unless they are asked for.

Loading TensorFlow's libraries logs notices (oneDNN, CUDA probing) before
TensorFlow reads TF_CPP_MIN_LOG_LEVEL, so that variable alone cannot hold
them back. The binaries therefore import TensorFlow with stderr held: the
C++ log lines below the level are dropped, everything else is written out
as it came, in order.

TensorFlow's Python logger is kept to warnings and errors too: its INFO
lines (checkpoint sharding times, SavedModel asset paths) would bury the
programs' own progress lines.

A user who sets TF_CPP_MIN_LOG_LEVEL gets that level, for the start-up
lines too; one who raises --verbosity gets TensorFlow's own defaults.

Keras imports matplotlib.pyplot as TensorFlow loads, for an image gallery
no binary draws: a fifth of the import's time (0.6-1.0 s of 3-4 s on a
2-core EPYC). The binaries import TensorFlow with matplotlib held back, and
import it later where a plot is drawn (`t2t_keras.metrics.attention_plots`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LEVEL = 3  # Fatal errors only: TensorFlow's errors come back as Python exceptions.

# An absl C++ log line: severity, date, time (its seconds unformatted before absl
# starts), thread, C++ file:line]. absl's Python lines look alike, from .py files.
_LOG_LINE = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+\.(cc|cpp|h):\d+\] ")
_SEVERITIES = "IWEF"
_PREINIT_NOTICE = "WARNING: All log messages before absl::InitializeLog() is called"


def import_tensorflow(verbose: bool) -> None:
    """Imports TensorFlow, dropping its start-up lines below TF_CPP_MIN_LOG_LEVEL.

    Also sets the level of TensorFlow's Python logger, and of TensorFlow's and
    Keras's lines through absl: WARNING, or, verbose, what the root logger lets
    through.

    Args:
      verbose: the user raised --verbosity: TF_CPP_MIN_LOG_LEVEL is left
        unset and TensorFlow prints what it prints by default.
    """
    if "tensorflow" not in sys.modules:
        if verbose and LEVEL_VARIABLE not in os.environ:
            level = "0"
        else:
            level = os.environ.setdefault(LEVEL_VARIABLE, str(QUIET_LEVEL))
        with (
            _stderr_without_logs_below(int(level) if level.isdecimal() else 0),
            _without_matplotlib(),
        ):
            import tensorflow  # noqa: F401
    logging.getLogger("tensorflow").setLevel(logging.NOTSET if verbose else logging.WARNING)
    absl_logger = logging.getLogger("absl")
    if not verbose and _from_our_code_or_a_warning not in absl_logger.filters:
        absl_logger.addFilter(_from_our_code_or_a_warning)


@contextlib.contextmanager
def _without_matplotlib() -> Iterator[None]:
    """Imports of matplotlib fail meanwhile (as if it were not installed), unless
    it is loaded already; afterwards it imports as usual."""
    if "matplotlib" in sys.modules:
        yield
        return
    sys.modules["matplotlib"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("matplotlib", ...) is None:
            del sys.modules["matplotlib"]


def _from_our_code_or_a_warning(record: logging.LogRecord) -> bool:
    """Keeps absl log records of ours, and TensorFlow's and Keras's from WARNING up.

    Some TensorFlow modules log INFO lines through absl itself (checkpoint
    sharding times), not through TensorFlow's logger.
    """
    return record.levelno >= logging.WARNING or not record.pathname.startswith(_theirs())


@functools.cache
def _theirs() -> tuple[str, ...]:
    """The directories of the installed tensorflow and keras packages."""
    packages = [sys.modules.get(name) for name in ("tensorflow", "keras")]
    files = [getattr(package, "__file__", None) for package in packages]
    return tuple(os.path.dirname(file) + os.sep for file in files if file)


def is_hidden(line: str, min_level: int) -> bool:
    """Whether a line of TensorFlow's start-up output falls below min_level (0-3)."""
    if min_level > 0 and line.startswith(_PREINIT_NOTICE):
        return True
    match = _LOG_LINE.match(line)
    return match is not None and _SEVERITIES.index(match.group(1)) < min_level


@contextlib.contextmanager
def _stderr_without_logs_below(min_level: int) -> Iterator[None]:
    """Holds what is written to file descriptor 2, then writes out the lines kept."""
    if min_level == 0:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not is_hidden(line, min_level)))
            sys.stderr.flush()
