"""Text files read line by line with clear errors, and files written whole or not at all."""

from __future__ import annotations

import os
import tempfile

from t2t_keras.errors import UserError


def read_text_lines(path: str, what: str = "the file") -> list[str]:
    """The lines of a UTF-8 text file, without their line breaks.

    Lines end at "\n" only (a file's lines as `wc -l` counts them), so text
    holding U+2028 or form feeds keeps its line count.

    Args:
      path: the file.
      what: how to name it in errors, e.g. "--decode_from_file".

    Raises:
      UserError: a missing or unreadable file, or invalid UTF-8 (naming the line).
    """
    try:
        with open(os.path.expanduser(path), "rb") as file:
            data = file.read()
    except OSError as error:
        raise UserError(f"{what} {path} cannot be read: {error.strerror}.") from None
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":  # The final line break ends the last line, it starts none.
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as error:
            raise UserError(
                f"{what} {path}, line {number}: invalid UTF-8 ({error.reason} at byte "
                f"{error.start} of the line); give UTF-8 text, e.g. convert it with "
                "`iconv -f LATIN1 -t UTF-8`."
            ) from None
    return lines


def make_writable_dir(path: str, what: str = "the output directory") -> str:
    """Creates directory `path` if needed and checks a file can be written in it.

    Returns:
      The path, with ~ expanded.

    Raises:
      UserError: it cannot be created or written, saying why.
    """
    path = os.path.expanduser(path)
    try:
        os.makedirs(path, exist_ok=True)
        _try_writing_in(path)
    except OSError as error:
        raise UserError(
            f"{what} {path} cannot be created or written ({error.strerror}); give a "
            "directory you may write to (it is created if missing)."
        ) from None
    return path


def check_writable(path: str, what: str = "the output file") -> None:
    """Raises a UserError now, before any work, if path cannot be written.

    Args:
      path: a file to be created or replaced.
      what: how to name it in errors, e.g. "--decode_to_file".
    """
    path = os.path.expanduser(path)
    directory = os.path.dirname(os.path.abspath(path))
    problem = None
    if os.path.isdir(path):
        problem = "is a directory"
    elif not os.path.isdir(directory):
        problem = f"is in {directory}, which does not exist"
    else:
        try:
            _try_writing_in(directory)
        except OSError as error:
            problem = f"cannot be written ({error.strerror})"
    if problem is None and os.path.exists(path) and not os.access(path, os.W_OK):
        problem = "is read-only"
    if problem:
        raise UserError(f"{what} {path} {problem}; give a file path in a writable directory.")


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
        _give_mode(temporary_path, path)
        os.replace(temporary_path, path)
    except BaseException:
        os.remove(temporary_path)
        raise


def _try_writing_in(directory: str) -> None:
    """Creates and removes a file in directory; raises OSError if that fails.

    Access checks can pass where a write fails (root, read-only mounts).
    """
    with tempfile.TemporaryFile(dir=directory):
        pass


def _give_mode(temporary_path: str, path: str) -> None:
    """The permissions of the file being replaced, or those a new file would get (umask)."""
    if os.path.exists(path):
        os.chmod(temporary_path, os.stat(path).st_mode & 0o7777)
        return
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary_path, 0o666 & ~umask)
