"""One trainer per output_dir: an exclusive lock on `output_dir/.lock` while training runs.

The lock is an advisory `flock`, which the operating system releases when the
process ends in any way, SIGKILL included: a killed trainer never leaves a
stale lock behind, and the file it leaves (naming the last holder) is reused.
A second trainer on the same directory is refused, naming the first.
Directories that are not local paths (gs://...) are not locked. Under
MultiWorkerMirroredStrategy only the chief, which writes output_dir, takes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import TextIO

from t2t_keras.errors import UserError
from t2t_keras.files import make_writable_dir

LOCK_FILE = ".lock"


@contextlib.contextmanager
def output_dir_lock(output_dir: str, enabled: bool = True) -> Iterator[None]:
    """Holds output_dir's lock for the body; a UserError if another process holds it.

    Args:
      output_dir: the training directory; created if missing.
      enabled: False for workers that do not write output_dir (and remote paths).
    """
    if not enabled or "://" in output_dir:
        yield
        return
    path = os.path.join(make_writable_dir(output_dir, "output_dir"), LOCK_FILE)
    with open(path, "a+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"output_dir {output_dir} is in use by another t2t-trainer ({_holder(file)}); "
                "two trainers must not write one directory. Wait for it to end or stop it "
                "(its lock goes with it, also when it is killed), or choose another "
                "--output_dir."
            ) from None
        file.seek(0)
        file.truncate()
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.ctime()}
        file.write(json.dumps(holder) + "\n")
        file.flush()
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def _holder(file: TextIO) -> str:
    """Who holds the lock, as its file says."""
    try:
        file.seek(0)
        holder = json.loads(file.read())
        return f"process {holder['pid']} on {holder['host']}, since {holder['since']}"
    except (ValueError, KeyError, TypeError):
        return "a process that has not yet said which"
