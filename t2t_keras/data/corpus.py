"""Raw corpora in tmp_dir: downloads, archive members, parallel text and SGML files.

Everything here is idempotent and atomic: a file already in tmp_dir is used as
it is (so users without network can put it there themselves), and a download
or an extraction goes to a temporary name first, so an interrupted run never
leaves a partial file under the final name.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from absl import logging

from t2t_keras.data.records import INCOMPLETE
from t2t_keras.errors import UserError

_CHUNK_BYTES = 1 << 20
_PROGRESS_EVERY_SECONDS = 10.0
_SEGMENT = re.compile(r"<seg[^>]*>(.*)</seg>", re.IGNORECASE)


@contextlib.contextmanager
def _written_whole(path: str) -> Iterator[BinaryIO]:
    """A file to write path's content into; it becomes path only if the block ends well."""
    partial = path + INCOMPLETE
    try:
        with open(partial, "wb") as out:
            yield out
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    os.replace(partial, path)


def maybe_download(tmp_dir: str, filename: str, url: str) -> str:
    """tmp_dir/filename, downloaded from url unless it is already there.

    Args:
      tmp_dir: the download directory, created if needed.
      filename: the file's name in tmp_dir.
      url: where to get it (http, https, ftp or file).

    Returns:
      The file's path.

    Raises:
      UserError: the download failed; the message names the file, the URL and
        where to put a copy fetched by other means.
    """
    path = os.path.join(tmp_dir, filename)
    if os.path.isfile(path):
        logging.info("%s is already in %s; not downloading it.", filename, tmp_dir)
        return path
    os.makedirs(tmp_dir, exist_ok=True)
    logging.info("Downloading %s to %s", url, path)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, _written_whole(path) as out:
            _copy_with_progress(response, out, filename)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise UserError(
            f"{path} is missing and could not be downloaded from {url} ({error}). "
            f"Download that file by other means and put it at {path}: t2t-datagen uses "
            "files already in --tmp_dir as they are."
        ) from None
    return path


def _copy_with_progress(source: BinaryIO, target: BinaryIO, what: str) -> None:
    copied, start, last_report = 0, time.monotonic(), time.monotonic()
    while chunk := source.read(_CHUNK_BYTES):
        target.write(chunk)
        copied += len(chunk)
        if time.monotonic() - last_report > _PROGRESS_EVERY_SECONDS:
            last_report = time.monotonic()
            rate = copied / (last_report - start) / 1e6
            logging.info("%s: %.1f MB downloaded (%.1f MB/s)", what, copied / 1e6, rate)


def extract_member(archive_path: str, member: str, tmp_dir: str) -> str:
    """tmp_dir/member, extracted from a tar archive (any compression) unless already there.

    Args:
      archive_path: a .tar, .tgz or .tar.gz file.
      member: the member's path inside the archive, e.g. "training/europarl-v7.de-en.de".
      tmp_dir: where the member is written, under its path in the archive.

    Returns:
      The extracted file's path.

    Raises:
      UserError: the archive cannot be read or lacks the member (a truncated
        or different download: delete it and run again).
    """
    path = os.path.join(tmp_dir, member)
    if os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with tarfile.open(archive_path) as archive:
            source = archive.extractfile(member)
            if source is None:
                raise KeyError(member)
            with source, _written_whole(path) as out:
                shutil.copyfileobj(source, out, _CHUNK_BYTES)
    except (tarfile.TarError, KeyError, EOFError, OSError) as error:
        raise UserError(
            f"Could not extract {member} from {archive_path} ({type(error).__name__}: "
            f"{error}). The archive is truncated or not the expected one: delete it and "
            "run t2t-datagen again to download it anew."
        ) from None
    return path


def read_lines(path: str) -> Iterator[bytes]:
    """Streams the raw lines of a text file, gunzipped when its name ends in .gz.

    Raises:
      UserError: a .gz file that is truncated or not gzip data.
    """
    if not path.endswith(".gz"):
        with open(path, "rb") as lines:
            yield from lines
        return
    try:
        with gzip.open(path, "rb") as lines:
            yield from lines
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise UserError(
            f"{path} cannot be gunzipped ({type(error).__name__}: {error}): it is truncated "
            "or not gzip data. Compress it again with gzip, or give it uncompressed without "
            "the .gz ending."
        ) from None


def decode_line(raw: bytes, path: str, line: int) -> str:
    """One line as text, without its line break.

    Raises:
      UserError: invalid UTF-8, naming the file and the line.
    """
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{path}, line {line}: invalid UTF-8 ({error.reason} at byte {error.start}); "
            "the corpus files must be UTF-8 text."
        ) from None


def read_parallel(source_path: str, target_path: str) -> Iterator[tuple[str, str]]:
    """Streams aligned (source line, target line) pairs, without line breaks.

    Either file may be gzipped (.gz). Memory stays bounded whatever the size.

    Raises:
      UserError: a missing file, invalid UTF-8 (naming file and line), or
        files of different line counts.
    """
    for path in (source_path, target_path):
        if not os.path.isfile(path):
            raise UserError(f"{path} is missing: it holds one side of a parallel corpus.")
    sources, targets = read_lines(source_path), read_lines(target_path)
    line = 0
    while True:
        line += 1
        source, target = next(sources, None), next(targets, None)
        if source is None and target is None:
            return
        if source is None or target is None:
            shorter = source_path if source is None else target_path
            raise UserError(
                f"{source_path} and {target_path} have different line counts: "
                f"{shorter} ends at line {line - 1}. Every source line needs its target line."
            )
        yield decode_line(source, source_path, line), decode_line(target, target_path, line)


def read_sgm(path: str) -> Iterator[str]:
    """The segments of a WMT SGML file (`<seg id="1">text</seg>`), one per line, in order."""
    for line, raw in enumerate(read_lines(path), start=1):
        match = _SEGMENT.search(decode_line(raw, path, line))
        if match:
            yield match.group(1).strip()
