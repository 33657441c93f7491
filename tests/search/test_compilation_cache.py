"""Where t2t-decoder keeps its compiled searches between runs (TF_XLA_FLAGS)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from t2t_keras.search.compilation_cache import default_directory, keep_compilations


def test_the_cache_goes_to_the_directory_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    assert keep_compilations(str(tmp_path / "xla")) == str(tmp_path / "xla")
    assert (tmp_path / "xla").is_dir()
    flags = f"--tf_xla_auto_jit=0 --tf_xla_persistent_cache_directory={tmp_path / 'xla'}"
    assert os.environ["TF_XLA_FLAGS"] == flags


def test_a_cache_set_by_the_user_wins_and_empty_keeps_none(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_persistent_cache_directory=/theirs --x=1")
    assert keep_compilations(str(tmp_path)) == "/theirs"
    monkeypatch.setenv("TF_XLA_FLAGS", "")
    assert keep_compilations("") is None
    assert os.environ["TF_XLA_FLAGS"] == ""


def test_a_directory_that_cannot_be_made_only_warns(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("TF_XLA_FLAGS", "")
    (tmp_path / "file").write_text("")
    assert keep_compilations(str(tmp_path / "file" / "xla")) is None
    assert "Cannot create the XLA cache directory" in caplog.text


@pytest.mark.parametrize("xdg", ["", "/x"])
def test_the_default_follows_xdg(xdg: str, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    expected = "/x/t2t_keras/xla" if xdg else str(Path.home() / ".cache" / "t2t_keras" / "xla")
    assert default_directory() == expected
