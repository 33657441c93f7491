"""t2t-score end to end, in-process: a trained tiny model scores a file of pairs; bad input exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from binaries import assert_user_error, run_in_process

from t2t_keras.problems.number_words import english, german
from t2t_keras.run.loading import load_trained
from t2t_keras.serving.scoring import Scorer

NUMBERS = [42, 7, 312_005, 999, 18, 61_000, 5, 230]
_HELP = """
import sys
sys.argv = ["t2t-score", "--help"]
from t2t_keras.bin import t2t_score
try:
    t2t_score.run()
except SystemExit as exit_request:
    assert exit_request.code == 0, exit_request.code
assert "tensorflow" not in sys.modules
"""


def test_help_documents_the_output_format_without_loading_tensorflow() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _HELP], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("t2t-score: a trained model's log-probability")
    for documented in ("log P(target | source)", "--normalize", "--output_file", "--batch_size"):
        assert documented in result.stdout


def test_scores_a_file_line_by_line_as_the_library_does(trained_dir: Path, tmp_path: Path) -> None:
    sources = [english(n) for n in NUMBERS]
    targets = [german(n) for n in NUMBERS]
    sources[2:2], targets[2:2] = [""], [german(3)]  # A blank source: an empty line.
    (tmp_path / "src").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("\n".join(targets) + "\n", encoding="utf-8")
    result = run_in_process(
        "t2t-score",
        f"--output_dir={trained_dir}",
        f"--source_file={tmp_path / 'src'}",
        f"--target_file={tmp_path / 'tgt'}",
        f"--output_file={tmp_path / 'scores'}",
        "--batch_size=48",
        "--normalize",
        "--xla_cache_dir=",
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "scores").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(sources) and lines[2] == ""
    trained = load_trained(str(trained_dir), use_xla=False)
    expected = Scorer(trained.model, trained.vocabs, 2048, jit_compile=False).score(
        sources, targets
    )
    for line, score in zip(lines, expected, strict=True):
        if score is None:
            continue
        total, tokens, per_token, mean = line.split("\t")
        assert int(tokens) == score.tokens == len(per_token.split())
        assert abs(float(total) - score.total) < 1e-4, (line, score)
        assert abs(float(mean) - score.mean) < 1e-4
        for printed, value in zip(per_token.split(), score.token_log_probs, strict=True):
            assert abs(float(printed) - value) < 1e-4
    assert "Wrote 9 lines to" in result.stderr


def test_mismatched_line_counts_exit_2_naming_both(trained_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "src").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("eins\nzwei\n", encoding="utf-8")
    result = run_in_process(
        "t2t-score",
        f"--output_dir={trained_dir}",
        f"--source_file={tmp_path / 'src'}",
        f"--target_file={tmp_path / 'tgt'}",
    )
    assert_user_error(result, "has 3 lines but --target_file", "has 2")


def test_no_model_and_a_missing_file_exit_2(tmp_path: Path) -> None:
    (tmp_path / "src").write_text("one\n", encoding="utf-8")
    files = [f"--source_file={tmp_path / 'src'}", f"--target_file={tmp_path / 'src'}"]
    result = run_in_process("t2t-score", f"--output_dir={tmp_path}", *files)
    assert_user_error(result, f"directory {tmp_path} holds no checkpoint")
    result = run_in_process(
        "t2t-score", f"--output_dir={tmp_path}", *files, f"--output_file={tmp_path / 'src'}"
    )
    assert_user_error(result, "is the --source_file file")
    missing = run_in_process("t2t-score", f"--source_file={tmp_path / 'nothing'}", files[1])
    assert_user_error(missing, "--source_file", "nothing cannot be read")
