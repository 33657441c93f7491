"""Latency as a user at a terminal sees it: a line typed in, the seconds until its answer."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence
from typing import IO


def typed_line_latencies(
    argv: Sequence[str],
    lines: Sequence[str],
    env: dict[str, str] | None = None,
    stderr: IO[str] | int = subprocess.DEVNULL,
) -> list[float]:
    """Starts argv, types `lines` into it one at a time through a pipe, and times each answer.

    Each line is sent only after the previous one's output line came back.

    Args:
      argv: a command that prints one line for each line it reads.
      lines: what is typed, without newlines.
      env: the command's environment (default: this process's).
      stderr: where its stderr goes.

    Returns:
      Seconds from each line's newline to its output line, in order.

    Raises:
      RuntimeError: the command ended before answering, or failed.
    """
    process = subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    seconds = []
    try:
        for line in lines:
            start = time.monotonic()
            process.stdin.write(f"{line}\n".encode())
            process.stdin.flush()
            if not process.stdout.readline():
                raise RuntimeError(f"{argv[0]} ended before answering {line!r}")
            seconds.append(time.monotonic() - start)
        process.stdin.close()
        if process.wait(timeout=120):
            raise RuntimeError(f"{argv[0]} exited with status {process.returncode}")
    finally:
        if process.poll() is None:
            process.kill()
    return seconds
