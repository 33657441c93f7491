"""Files of any bytes through t2t-bleu and t2t-evalb: scored, or refused in one paragraph
naming the first line that is not UTF-8 (a lone surrogate written by a lenient encoder is
not), with exit status 2; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from binaries import assert_user_error, run_in_process
from hostile_bytes import first_bad_line, line_bytes
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

lines = line_bytes(b"eins zwei", b"(S (NN a) (VB b))", "zw\u00f6lf".encode())
# Two files of as many lines.
file_pairs = st.integers(1, 5).flatmap(
    lambda count: st.tuples(*[st.lists(lines, min_size=count, max_size=count)] * 2)
)
# Each command: its two file flags, in the order it reads them, and a line of its report.
COMMANDS = {
    "t2t-bleu": ("--translation", "--reference", "BLEU (sacreBLEU: cased, detokenized) = "),
    "t2t-evalb": ("--gold", "--test", "=== Summary ==="),
}


@pytest.mark.parametrize("command", COMMANDS)
@ci_budget(15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file_pairs)
@example(([b"(S (NN \xed\xa0\x80))"], [b"(S (NN a))"]))
@example(([b"(S (NN a))"], ["\udcff".encode("utf-8", "surrogatepass")]))
def test_utf8_files_are_scored_and_the_first_line_that_is_not_is_named(
    tmp_path: Path, command: str, pair: tuple[list[bytes], list[bytes]]
) -> None:
    *flags, report = COMMANDS[command]
    paths = []
    for flag, file_lines in zip(flags, pair, strict=True):
        path = tmp_path / flag.strip("-")
        path.write_bytes(b"".join(line + b"\n" for line in file_lines))
        paths.append(str(path))
    result = run_in_process(command, *(f"{f}={p}" for f, p in zip(flags, paths, strict=True)))
    for flag, path, file_lines in zip(flags, paths, pair, strict=True):
        if (number := first_bad_line(file_lines)) is not None:
            assert_user_error(result, f"{flag} {path}, line {number}: invalid UTF-8")
            return
    assert result.returncode == 0, result.stderr
    assert report in result.stdout
