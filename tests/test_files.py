"""Reading text lines with clear errors; checking an output path before the work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from t2t_keras.errors import UserError
from t2t_keras.files import check_writable, make_writable_dir, read_text_lines, write_atomically


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
