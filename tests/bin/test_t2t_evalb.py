"""t2t-evalb: EVALB's summary of two tree files; malformed lines are errors; bad input exits 2."""

from __future__ import annotations

from pathlib import Path

from binaries import assert_user_error, run_in_process

GOLD = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))"
FLAT = "(TOP (S (DT The) (NN cat) (VBD sat) (IN on) (DT the) (NN mat) (. .)))"


def summary_value(stdout: str, name: str, section: int = 0) -> float:
    lines = [line for line in stdout.splitlines() if line.startswith(name)]
    return float(lines[section].split("=")[1])


def test_scores_and_counts_errors(tmp_path: Path) -> None:
    gold, test = tmp_path / "gold.trees", tmp_path / "test.trees"
    gold.write_text(f"{GOLD}\n{GOLD}\n{GOLD}\n", encoding="utf-8")
    test.write_text(f"{GOLD}\n{FLAT}\n(S (NP (DT The)\n", encoding="utf-8")
    result = run_in_process("t2t-evalb", f"--gold={gold}", f"--test={test}", "--sentences")
    assert result.returncode == 0, result.stderr
    # Sentence 2 has S right and misses NP, VP, PP, NP: recall 6 / 10, precision 6 / 6.
    assert summary_value(result.stdout, "Number of Error sentence") == 1
    assert summary_value(result.stdout, "Bracketing Recall") == 60.0
    assert summary_value(result.stdout, "Bracketing Precision") == 100.0
    assert summary_value(result.stdout, "Bracketing FMeasure") == 75.0
    assert summary_value(result.stdout, "Complete match") == 50.0
    rows = result.stdout.splitlines()[3:6]  # EVALB's table: ID, length, status ...
    assert [row.split()[:3] for row in rows] == [["1", "7", "0"], ["2", "7", "0"], ["3", "7", "1"]]
    assert "--test line 3 is not a tree" in result.stderr


def test_files_of_different_lengths_are_refused(tmp_path: Path) -> None:
    gold, test = tmp_path / "gold.trees", tmp_path / "test.trees"
    gold.write_text(f"{GOLD}\n{GOLD}\n", encoding="utf-8")
    test.write_text(f"{GOLD}\n", encoding="utf-8")
    result = run_in_process("t2t-evalb", f"--gold={gold}", f"--test={test}")
    assert_user_error(result, "--gold has 2 lines but --test has 1")
    assert_user_error(run_in_process("t2t-evalb", f"--gold={gold}"), "--test")
