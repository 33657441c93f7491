"""Directories written by an earlier t2t_keras still load and decode as they did.

`tests/fixtures/earlier_run/` holds an averaged training directory and its
CTranslate2 export, with what t2t-decoder wrote from them then (its README
gives the commands). Today's t2t-decoder must write the same outputs, with
scores equal to the six decimals written, give or take float rounding.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from binaries import run_in_process

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "earlier_run"


def decoded(path: Path) -> tuple[list[str], list[float]]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [text for text, _ in rows], [float(score) for _, score in rows]


@pytest.mark.parametrize(
    ("runtime", "directory_flag", "directory"),
    [
        ("tensorflow", "--output_dir", "training"),
        ("ctranslate2", "--ctranslate2_dir", "ctranslate2"),
    ],
)
def test_an_earlier_directory_decodes_as_it_did(
    tmp_path: Path, runtime: str, directory_flag: str, directory: str
) -> None:
    copy = Path(shutil.copytree(FIXTURE, tmp_path / "earlier_run"))  # The fixture stays as it is.
    output = tmp_path / "outputs"
    result = run_in_process(
        "t2t-decoder",
        f"--runtime={runtime}",
        f"{directory_flag}={copy / directory}",
        f"--decode_from_file={copy / 'inputs.en'}",
        f"--decode_to_file={output}",
        "--decode_hparams=write_beam_scores=true",
    )
    assert result.returncode == 0, result.stderr
    texts, scores = decoded(output)
    expected_texts, expected_scores = decoded(FIXTURE / f"expected.{runtime}")
    assert texts == expected_texts
    assert scores == pytest.approx(expected_scores, abs=2e-5)
