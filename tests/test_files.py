"""Reading text lines with clear errors; checking an output path before the work;
writing whole or not at all, and cleaning up after killed writers."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from t2t_keras.errors import UserError
from t2t_keras.files import (
    check_writable,
    make_writable_dir,
    read_text_lines,
    remove_abandoned,
    replace_directory,
    temporary_path_for,
    write_atomically,
)


def test_lines_split_on_newline_only(tmp_path: Path) -> None:
    path = tmp_path / "text.de"
    path.write_bytes("eins\u2028zwei\r\ndrei\n\nvier".encode())
    assert read_text_lines(str(path)) == ["eins\u2028zwei", "drei", "", "vier"]
    path.write_bytes(b"")
    assert read_text_lines(str(path)) == []


def test_invalid_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "text.de"
    path.write_bytes(b"gut\nauch gut\nschlecht \xff\n")
    with pytest.raises(UserError, match=r"--input .*text\.de, line 3: invalid UTF-8"):
        read_text_lines(str(path), "--input")


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="nothing.de cannot be read: No such file"):
        read_text_lines(str(tmp_path / "nothing.de"))


def test_unwritable_outputs_are_refused_before_the_work(tmp_path: Path) -> None:
    check_writable(str(tmp_path / "new.txt"))
    with pytest.raises(UserError, match="is a directory"):
        check_writable(str(tmp_path))
    with pytest.raises(UserError, match="which does not exist"):
        check_writable(str(tmp_path / "no" / "out.txt"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="which does not exist"):
        check_writable(str(tmp_path / "file" / "out.txt"))
    assert not list(tmp_path.glob(".*")), "the check leaves no file behind"


def test_write_atomically_replaces_whole(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old")
    write_atomically(b"new", str(path))
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_files_keep_or_get_normal_permissions(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    write_atomically(b"x", str(path))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)
    write_atomically(b"y", str(path))
    assert path.stat().st_mode & 0o777 == 0o640


def test_writable_dir_is_created_or_refused(tmp_path: Path) -> None:
    assert make_writable_dir(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="--plots .*file/sub cannot be created or written"):
        make_writable_dir(str(tmp_path / "file" / "sub"), "--plots")


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _left_by(pid: int, path: Path, kind: str) -> Path:
    """A leftover of a writer of path in process pid, named as files.temporary_path_for does."""
    own = Path(temporary_path_for(str(path), kind))
    return own.with_name(own.name.replace(f".{os.getpid()}@", f".{pid}@", 1))


def test_leftovers_of_killed_writers_go_and_an_earlier_version_comes_back(
    tmp_path: Path,
) -> None:
    target, dead = tmp_path / "export", _dead_pid()
    moved_aside = _left_by(dead, target, "old")
    moved_aside.mkdir()
    (moved_aside / "model.bin").write_text("earlier")
    unfinished = _left_by(dead, target, "tmp")
    unfinished.mkdir()
    running = Path(temporary_path_for(str(target)))  # This process: still writing.
    running.write_text("")
    other_host = tmp_path / f".export.{dead}@elsewhere.0123abcd.tmp"
    other_host.write_text("")
    other_name = _left_by(dead, tmp_path / "export2", "tmp")
    other_name.write_text("")

    assert set(remove_abandoned(str(target))) == {str(moved_aside), str(unfinished)}
    assert (target / "model.bin").read_text() == "earlier"
    remaining = {path.name for path in tmp_path.iterdir()}
    assert remaining == {"export", running.name, other_host.name, other_name.name}


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    _left_by(_dead_pid(), path, "tmp").write_text("half")
    write_atomically(b"whole", str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_failed_write_names_the_file_and_keeps_the_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("earlier")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4, hard))
    try:
        with pytest.raises(OSError, match="File too large") as raised:
            write_atomically(b"longer than four bytes", str(path))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert raised.value.filename == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert path.read_text() == "earlier"


def test_replace_directory_swaps_whole(tmp_path: Path) -> None:
    target, new = tmp_path / "model", tmp_path / "new"
    for directory, text in ((target, "old"), (new, "new")):
        directory.mkdir()
        (directory / "file").write_text(text)
    replace_directory(str(new), str(target))
    assert (target / "file").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
