"""Files written whole or not at all."""

from __future__ import annotations

import os
import tempfile


def write_atomically(data: bytes, path: str) -> None:
    """Writes data to a temporary file beside path, then renames it to path.

    A reader, or a process killed mid-write, never sees a partial file at path.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    descriptor, temporary_path = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as temporary_file:
            temporary_file.write(data)
            temporary_file.flush()
            os.fsync(temporary_file.fileno())
        os.replace(temporary_path, path)
    except BaseException:
        os.remove(temporary_path)
        raise
