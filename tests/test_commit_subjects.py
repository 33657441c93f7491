"""Commit subjects stay at most 72 characters, from the commit that added the check on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import commit_subjects
import pytest
from commit_subjects import CHECK_PATH, MAX_SUBJECT, NoHistory, long_subjects

_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}


def test_this_historys_subjects_are_short() -> None:
    try:
        found = long_subjects(commit_subjects.ROOT)
    except NoHistory as error:
        pytest.skip(f"commit subjects not checked: {error}")
    assert found == [], (
        f"Commit subjects longer than {MAX_SUBJECT} characters (docs/developing.md: a short "
        "imperative subject, a blank line, then the why and the figures); amend them before "
        "they land, or list a landed one's hash in tests/long_subjects_allowed.txt:\n"
        + "\n".join(found)
    )


def _git(repo: Path, *args: str) -> str:
    environment = {**os.environ, **_IDENTITY}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _commit(repo: Path, subject: str, path: str = "file.txt") -> str:
    file = repo / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(f"{file.read_text() if file.exists() else ''}{subject}\n")
    _git(repo, "add", path)
    _git(repo, "commit", "-q", "-m", f"{subject}\n\nThe body may be as long as it needs.")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    return tmp_path


def test_a_long_subject_fails_and_earlier_ones_do_not(repo: Path) -> None:
    _commit(repo, "An old subject from before the check," + " long" * 20)
    _commit(repo, "Add the check", CHECK_PATH)
    _commit(repo, "Fix a short thing")
    assert long_subjects(repo, allowed=set()) == []
    long = "Make a change whose subject runs" + " on and" * 8 + " on"
    commit = _commit(repo, long)
    assert long_subjects(repo, allowed=set()) == [f"{commit[:12]} ({len(long)} characters) {long}"]
    assert long_subjects(repo, allowed={commit}) == []


def test_the_check_counts_from_a_root_commit(repo: Path) -> None:
    _commit(repo, "x" * (MAX_SUBJECT + 1), CHECK_PATH)
    assert len(long_subjects(repo, allowed=set())) == 1
    _git(repo, "commit", "-q", "--amend", "-m", "x" * MAX_SUBJECT)
    assert long_subjects(repo, allowed=set()) == []


def test_a_shallow_clone_or_a_tree_without_history_is_skipped(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _commit(repo, "Add the check", CHECK_PATH)
    _commit(repo, "A second commit")
    shallow = tmp_path_factory.mktemp("shallow")
    _git(shallow, "clone", "-q", "--depth=1", f"file://{repo}", ".")
    with pytest.raises(NoHistory, match="shallow"):
        long_subjects(shallow, allowed=set())
    with pytest.raises(NoHistory):
        long_subjects(tmp_path_factory.mktemp("no_repository"), allowed=set())


def test_the_allowlist_reads_hashes_and_comments(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed.txt"
    allowed.write_text("# why each is here\n" + "a" * 40 + "  # slipped through\n\n")
    assert commit_subjects.allowed_hashes(allowed) == {"a" * 40}
