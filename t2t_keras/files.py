"""Text files read line by line with clear errors, and files written whole or not at all.

What is being written sits beside its destination under a hidden name,
`.<name>.<pid>@<host>.<random>.tmp`, and is renamed into place when
complete; an earlier directory being replaced is moved aside as `... .old`
first. A writer killed meanwhile leaves only such names, and the next writer
of the same destination removes them once their process is gone
(`remove_abandoned`), putting back an earlier version it finds moved aside.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator

from t2t_keras.errors import UserError

# A host name as it can stand in a file name between dots.
_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "localhost"
_LEFTOVER = re.compile(r"(?P<pid>\d+)@(?P<host>[A-Za-z0-9_-]+)\.[0-9a-f]{8}\.(?P<kind>tmp|old)")


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

    A reader, or a process killed mid-write, never sees a partial file at
    path; what a killed writer left is removed first. A failed write (a full
    disk) raises an OSError naming path, and an earlier file there is kept.
    """
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    remove_abandoned(path)
    temporary_path = temporary_path_for(path)
    try:
        with naming_failed_writes(path):
            descriptor = os.open(temporary_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as temporary_file:
                temporary_file.write(data)
                temporary_file.flush()
                os.fsync(temporary_file.fileno())
        _give_mode(temporary_path, path)
        os.replace(temporary_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary_path)
        raise


def temporary_path_for(path: str, kind: str = "tmp") -> str:
    """A new hidden path beside path, for writing it (kind "tmp") or moving it aside ("old").

    The name holds this process's id and host, so that `remove_abandoned`
    can tell a killed writer's leftovers from those of a writer still running.
    """
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{os.getpid()}@{_HOST}.{secrets.token_hex(4)}.{kind}")


def make_temporary_dir(path: str, what: str, flag: str) -> str:
    """Creates a new hidden directory beside path to write it in (`temporary_path_for`).

    Args:
      path: the directory it will become.
      what: how to name path in errors, e.g. "the export directory".
      flag: the flag that chose path, e.g. "--export_dir".

    Raises:
      UserError: it cannot be created, saying why.
    """
    temporary = temporary_path_for(path)
    try:
        os.makedirs(temporary)
    except OSError as error:
        raise UserError(
            f"cannot write {what} {path} ({error.strerror}); give {flag} a path you may write to."
        ) from None
    return temporary


def remove_abandoned(path: str) -> list[str]:
    """Removes what writers of path that were killed left beside it.

    Leftovers of processes still running (or of other hosts) are kept. An
    earlier version that a killed writer had moved aside to replace it is
    put back at path if nothing is there.

    Returns:
      The leftovers removed or put back.
    """
    directory, name = os.path.split(os.path.abspath(path))
    try:
        entries = sorted(os.listdir(directory))
    except OSError:  # No such directory (yet), or one that cannot be read: nothing to do.
        return []
    handled = []
    for entry in entries:
        match = (
            _LEFTOVER.fullmatch(entry[len(name) + 2 :]) if entry.startswith(f".{name}.") else None
        )
        if match is None or not _gone(int(match["pid"]), match["host"]):
            continue
        leftover = os.path.join(directory, entry)
        try:
            if match["kind"] == "old" and not os.path.lexists(path):
                os.rename(leftover, path)
            else:
                _remove(leftover)
        except OSError:  # Best effort: a leftover that cannot go harms nothing.
            continue
        handled.append(leftover)
    return handled


def replace_directory(temporary_dir: str, path: str) -> None:
    """Renames a complete temporary_dir to path; an earlier directory there goes only after.

    The earlier directory is moved aside (`temporary_path_for(path, "old")`)
    for the moment between the two renames; if the process is killed then,
    `remove_abandoned(path)` puts it back.
    """
    if not os.path.lexists(path):
        os.rename(temporary_dir, path)
        return
    old_dir = temporary_path_for(path, "old")
    os.rename(path, old_dir)
    try:
        os.rename(temporary_dir, path)
    except BaseException:
        os.rename(old_dir, path)
        raise
    _remove(old_dir)


@contextlib.contextmanager
def naming_failed_writes(path: str) -> Iterator[None]:
    """OSErrors raised meanwhile that name no file are raised again naming path.

    Python's writes name no file when the disk is full; the message should
    say what could not be written.
    """
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.errno is None:
            raise
        raise OSError(error.errno, error.strerror, path) from error


def _try_writing_in(directory: str) -> None:
    """Creates and removes a file in directory; raises OSError if that fails.

    Access checks can pass where a write fails (root, read-only mounts).
    """
    with tempfile.TemporaryFile(dir=directory):
        pass


def _gone(pid: int, host: str) -> bool:
    """Whether process pid of host is known to have ended (only this host's can be asked)."""
    if host != _HOST or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # Another user's process: it runs.
        pass
    return False


def _remove(path: str) -> None:
    """Deletes a file or a directory tree, if it is still there."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _give_mode(temporary_path: str, path: str) -> None:
    """The permissions of the file being replaced, or those a new file would get (umask)."""
    if os.path.exists(path):
        os.chmod(temporary_path, os.stat(path).st_mode & 0o7777)
        return
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary_path, 0o666 & ~umask)
