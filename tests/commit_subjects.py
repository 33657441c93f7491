"""The history's convention: every commit subject is at most 72 characters.

Checked from the commit that added this file on: the history before it is
kept as it is (main is never rewritten). A commit that slipped through is
exempted by its full hash in `long_subjects_allowed.txt` beside this file.
Run as a script (`.venv/bin/python tests/commit_subjects.py`) it prints the
subjects too long, one a line, and exits 1 if there are any.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAX_SUBJECT = 72
HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
CHECK_PATH = "tests/commit_subjects.py"
ALLOWED = HERE.parent / "long_subjects_allowed.txt"


class NoHistory(Exception):
    """The checkout has no history to check: not a repository, or a shallow clone."""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise NoHistory(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def first_checked_commit(repo: Path) -> str:
    """The commit that added the check: subjects are checked from it on.

    Raises:
      NoHistory: repo is no git repository, a shallow clone, or has no commit
        adding the check (a tree copied without its history).
    """
    if _git(repo, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise NoHistory("a shallow clone holds only part of the history")
    added = _git(repo, "log", "--diff-filter=A", "--format=%H", "--", CHECK_PATH).split()
    if not added:
        raise NoHistory(f"no commit of this history adds {CHECK_PATH}")
    return added[-1]  # The earliest, should the file have been removed and added again.


def allowed_hashes(path: Path = ALLOWED) -> set[str]:
    """Full hashes exempted, one a line; `#` starts a comment."""
    if not path.exists():
        return set()
    lines = (
        line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()
    )
    return {line for line in lines if line}


def long_subjects(repo: Path, allowed: set[str] | None = None) -> list[str]:
    """`hash subject` of each non-merge commit from the check's on whose subject is
    longer than MAX_SUBJECT characters, unless its hash is allowed.

    Raises:
      NoHistory: as `first_checked_commit`.
    """
    allowed = allowed_hashes() if allowed is None else allowed
    first = first_checked_commit(repo)
    # HEAD's commits less the first's parents' history (none for a root commit).
    log = _git(repo, "log", "--no-merges", "--format=%H%x00%s", "HEAD", "--not", f"{first}^@")
    found = []
    for line in log.splitlines():
        commit, subject = line.split("\0", 1)
        if len(subject) > MAX_SUBJECT and commit not in allowed:
            found.append(f"{commit[:12]} ({len(subject)} characters) {subject}")
    return found


def main() -> int:
    try:
        found = long_subjects(ROOT)
    except NoHistory as error:
        print(f"commit subjects not checked: {error}")
        return 0
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
