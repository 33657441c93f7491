"""Raw corpora: downloads that skip files already there, archive members, parallel text, SGML."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from t2t_keras.data import corpus
from t2t_keras.errors import UserError


def test_download_fetches_once_then_uses_the_file(tmp_path: Path) -> None:
    source = tmp_path / "remote" / "corpus.txt"
    source.parent.mkdir()
    source.write_bytes(b"hello\n" * 100_000)
    tmp_dir = tmp_path / "tmp"
    path = corpus.maybe_download(str(tmp_dir), "corpus.txt", source.as_uri())
    assert Path(path).read_bytes() == source.read_bytes()
    assert os.listdir(tmp_dir) == ["corpus.txt"]  # No temporary file left.
    source.unlink()  # A second call must not need the source any more.
    assert corpus.maybe_download(str(tmp_dir), "corpus.txt", source.as_uri()) == path


def test_failed_download_names_the_file_the_url_and_leaves_nothing(tmp_path: Path) -> None:
    url = (tmp_path / "nowhere" / "train.tgz").as_uri()
    with pytest.raises(UserError, match=r"train\.tgz is missing and could not be downloaded from"):
        corpus.maybe_download(str(tmp_path / "tmp"), "train.tgz", url)
    assert os.listdir(tmp_path / "tmp") == []


def make_archive(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> None:
    with tarfile.open(path, mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_extract_member_once(tmp_path: Path) -> None:
    archive = tmp_path / "a.tgz"
    make_archive(archive, {"training/x.en": b"one\n", "other": b"no"})
    path = corpus.extract_member(str(archive), "training/x.en", str(tmp_path / "tmp"))
    assert Path(path).read_bytes() == b"one\n"
    archive.unlink()
    assert corpus.extract_member(str(archive), "training/x.en", str(tmp_path / "tmp")) == path


@pytest.mark.parametrize("damage", ["missing member", "truncated"])
def test_bad_archive_says_to_delete_it(tmp_path: Path, damage: str) -> None:
    archive = tmp_path / "a.tgz"
    make_archive(archive, {"x.en": os.urandom(200_000)})
    if damage == "truncated":
        archive.write_bytes(archive.read_bytes()[:50_000])
    member = "x.de" if damage == "missing member" else "x.en"
    with pytest.raises(UserError, match="delete it and run t2t-datagen again"):
        corpus.extract_member(str(archive), member, str(tmp_path / "tmp"))
    assert not (tmp_path / "tmp" / member).exists()
    assert not list((tmp_path / "tmp").glob("*.incomplete"))


def test_read_parallel_plain_and_gzipped(tmp_path: Path) -> None:
    (tmp_path / "a.en").write_text("Hello\r\nWorld\n")
    with gzip.open(tmp_path / "a.de.gz", "wt", encoding="utf-8") as target:
        target.write("Hallo\nWelt\n")
    pairs = list(corpus.read_parallel(str(tmp_path / "a.en"), str(tmp_path / "a.de.gz")))
    assert pairs == [("Hello", "Hallo"), ("World", "Welt")]


def test_read_parallel_errors(tmp_path: Path) -> None:
    (tmp_path / "a.en").write_text("one\ntwo\n")
    (tmp_path / "a.de").write_text("eins\n")
    with pytest.raises(UserError, match=r"a\.de ends at line 1"):
        list(corpus.read_parallel(str(tmp_path / "a.en"), str(tmp_path / "a.de")))
    (tmp_path / "a.de").write_bytes(b"eins\nzw\xff\n")
    with pytest.raises(UserError, match=r"a\.de, line 2: invalid UTF-8"):
        list(corpus.read_parallel(str(tmp_path / "a.en"), str(tmp_path / "a.de")))
    with pytest.raises(UserError, match=r"b\.de is missing"):
        list(corpus.read_parallel(str(tmp_path / "a.en"), str(tmp_path / "b.de")))
    whole = gzip.compress(b"eins\nzwei\n" * 1000)
    for name, damaged in (("cut.de.gz", whole[: len(whole) // 2]), ("plain.de.gz", b"eins\n")):
        (tmp_path / name).write_bytes(damaged)
        with pytest.raises(UserError, match=rf"{name} cannot be gunzipped .*truncated"):
            list(corpus.read_parallel(str(tmp_path / "a.en"), str(tmp_path / name)))


def test_read_sgm(tmp_path: Path) -> None:
    (tmp_path / "t.sgm").write_text(
        '<srcset setid="newstest2014" srclang="any">\n<doc sysid="ref" docid="1">\n'
        '<seg id="1">Gutach: Noch mehr Sicherheit für Fußgänger</seg>\n'
        '<seg id="2"> Sie stehen &quot;da&quot; </seg>\n</doc>\n</srcset>\n'
    )
    assert list(corpus.read_sgm(str(tmp_path / "t.sgm"))) == [
        "Gutach: Noch mehr Sicherheit für Fußgänger",
        "Sie stehen &quot;da&quot;",
    ]
