"""t2t-bleu: three labelled numbers equal to sacrebleu's; bad input exits 2.

The first test runs the installed program; the others call it in-process.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest
import sacremoses
from binaries import assert_user_error, run, run_in_process, script
from sacrebleu.metrics import BLEU

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
_LINE = re.compile(r"^(BLEU \(.+\)) = (\d+\.\d\d)  (.+ \(BP = .+\))  (\S+)$")


def expected_scores(
    hypotheses: list[str], references: list[str], language: str
) -> list[tuple[str, str, str]]:
    """(signature, score to 2 decimals, details) of the three conventions, from the libraries."""
    tokenizer = sacremoses.MosesTokenizer(lang=language)

    def paper(line: str) -> str:
        tokens = tokenizer.tokenize(
            line, escape=True, aggressive_dash_splits=False, return_str=True
        )
        return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", tokens, flags=re.ASCII)

    conventions = [
        (BLEU(), hypotheses, references, ""),
        (
            BLEU(tokenize="none", smooth_method="none"),
            [paper(line) for line in hypotheses],
            [paper(line) for line in references],
            f"pre:moses-{language}+atat|",
        ),
        (BLEU(lowercase=True), hypotheses, references, ""),
    ]
    expected = []
    for metric, system, reference, prefix in conventions:
        result = metric.corpus_score(system, [reference])
        details = result.format().split(" ", 3)[3]
        expected.append((prefix + str(metric.get_signature()), f"{result.score:.2f}", details))
    return expected


def printed_scores(result: subprocess.CompletedProcess) -> list[tuple[str, str, str]]:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3, result.stdout
    matches = [_LINE.match(line) for line in lines]
    assert all(matches), result.stdout
    assert matches[0].group(1) == "BLEU (sacreBLEU: cased, detokenized)"
    assert "uncased" in matches[2].group(1)
    return [(match.group(4), match.group(2), match.group(3)) for match in matches]


def test_prints_the_three_conventions(tmp_path: Path) -> None:
    references = [
        'Die "Mercedes-Benz"-Gruppe verdiente 1,5 Mrd. Euro & mehr.',
        "Der EU-Kommissar sagte,\u2028es sei gut.",
        "Im Jahr 2013 stiegen die Preise um 4,5 Prozent.",
    ]
    hypotheses = [
        "Die Mercedes-Benz-Gruppe verdiente 1,5 Mrd. Euro & mehr.",
        "der eu-kommissar sagte,\u2028es sei gut.",
        "Im Jahr 2013 stiegen die Preise um 4,5 Prozent.",
    ]
    assert_prints_the_library_scores(tmp_path, hypotheses, references, in_process=False)


def assert_prints_the_library_scores(
    tmp_path: Path, hypotheses: list[str], references: list[str], in_process: bool = True
) -> None:
    """t2t-bleu on files of these lines prints what sacrebleu/sacremoses give directly."""
    (tmp_path / "hyp.de").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    (tmp_path / "ref.de").write_text("\n".join(references) + "\n", encoding="utf-8")
    result = (run_in_process if in_process else run)(
        "t2t-bleu",
        f"--translation={tmp_path / 'hyp.de'}",
        f"--reference={tmp_path / 'ref.de'}",
        "--language=de",
    )
    assert in_process or result.stderr == "", result.stderr  # No TensorFlow start-up lines.
    assert printed_scores(result) == expected_scores(hypotheses, references, "de")


def test_real_newstest_sample(tmp_path: Path) -> None:
    reference_path = SHARED_DATA / "wmt" / "newstest2013.de"
    if not reference_path.is_file():
        pytest.skip(f"{reference_path} is absent")
    references = reference_path.read_text(encoding="utf-8").split("\n")[:1000]
    # A stand-in system: every other sentence loses its last word, every third is lowercased.
    hypotheses = [
        (line.rsplit(" ", 1)[0] if index % 2 else line).lower() if index % 3 == 0 else line
        for index, line in enumerate(references)
    ]
    assert_prints_the_library_scores(tmp_path, hypotheses, references)


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (None, ["missing.de cannot be read: No such file"]),
        (b"eins\nzwei\n\xff drei\n", ["bad.de, line 3: invalid UTF-8"]),
        (b"eins\nzwei\n", ["2 hypotheses but 3 references"]),
    ],
    ids=["missing_file", "invalid_utf8", "line_counts"],
)
def test_bad_files_exit_2(tmp_path: Path, content: bytes | None, fragments: list[str]) -> None:
    (tmp_path / "ref.de").write_bytes(b"eins\nzwei\ndrei\n")
    name = "missing.de" if content is None else "bad.de"
    if content is not None:
        (tmp_path / name).write_bytes(content)
    result = run_in_process(
        "t2t-bleu", f"--translation={tmp_path / name}", f"--reference={tmp_path / 'ref.de'}"
    )
    assert_user_error(result, *fragments)


def test_missing_flag_exits_2(tmp_path: Path) -> None:
    (tmp_path / "hyp.de").write_text("eins\n", encoding="utf-8")
    result = run_in_process("t2t-bleu", f"--translation={tmp_path / 'hyp.de'}")
    assert_user_error(result, "--reference is required")


def test_a_reader_that_goes_away_ends_it_quietly(tmp_path: Path) -> None:
    """`t2t-bleu ... | head -1`: no traceback when the pipe closes, SIGPIPE's status."""
    text = tmp_path / "text"
    text.write_text("a small house\n")
    process = subprocess.Popen(
        [str(script("t2t-bleu")), f"--translation={text}", f"--reference={text}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # Long before it prints: starting takes a second.
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGPIPE, stderr.decode()
    assert b"Traceback" not in stderr
