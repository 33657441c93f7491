"""Hostile input through t2t-decoder's file and interactive modes and the exported SavedModel.

Random text of every script, control characters, line separators other than
"\\n" (U+2028, U+0085, form feeds, lone "\\r"), byte order marks, NUL bytes,
empty, blank and 100,000-character lines, and random bytes. What each gives:

  - file mode: lines end at "\\n" only (a "\\r" before it is dropped), so the
    output has exactly one line per input line, and no output line holds a
    character that any tool reads as a line break. A file that is not UTF-8
    is refused before anything is written, naming its first bad line; the
    output file the user had is kept.
  - interactive mode: the same bytes give the same output lines as file mode;
    a line that is not UTF-8 gets an empty output line and a warning naming it.
  - both: an input with nothing the model reads (blank, or only characters
    the vocabulary drops, such as a BOM or controls) gets an empty line; a
    line longer than max_length tokens is cut to it.
  - the SavedModel: one output string and score per input string, whatever
    the bytes (invalid UTF-8 included), for a batch of any size, none included.

In file and interactive modes the search is a beam of 2, not XLA-compiled,
one sentence per batch, and the fuzzed lines are short or very long: few
distinct shapes, so few traces.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from t2t_keras import registry
from t2t_keras.data.problem import Problem
from t2t_keras.data.trees import escape_words, parse_tree
from t2t_keras.errors import UserError
from t2t_keras.export.saved_model import SIGNATURE, export_translator
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.file_decoding import decode_file, decode_interactive, translate_lines
from t2t_keras.serving.translator import Translator

# Every character str.splitlines() ends a line at: what other tools may count as a break.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
ODD_CHARACTERS = [
    "\x00",
    "\t",
    "\r",
    "\x0b",
    "\x0c",
    "\x1b",
    "\x1c",
    "\x7f",
    "\x85",
    "\xa0",
    "\u0301",  # A combining accent with nothing to combine with.
    "\u200b",
    "\u202e",  # Right-to-left override.
    "\u2028",
    "\u2029",
    "\u3000",
    "\ufeff",
    "\ufffd",
    "\U0001f600",
]
WORDS = ["one", "forty two", "seven hundred", "zwölf", "日本語", "عربى", "ελληνικά", "ñ"]


def few_examples(count: int) -> settings:
    """Hypothesis settings for a test of `count` examples that may take seconds each."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


short_lines = st.one_of(
    st.just(""),
    st.text(st.sampled_from(" \t\xa0\u3000\u2028\x85"), min_size=1, max_size=4),  # Blank.
    st.lists(
        st.one_of(
            st.sampled_from(ODD_CHARACTERS),
            st.sampled_from(WORDS),
            st.characters(exclude_characters="\n"),
        ),
        min_size=1,
        max_size=2,  # At most 7 tokens with EOS: one bucket width.
    ).map("".join),
)
long_lines = st.builds(
    lambda piece, count: (piece * count)[:100_000],
    st.sampled_from(["seven ", "x", "日本", "\x00", " ", "\u2028"]),
    st.integers(3_000, 100_000),
)
hostile_lines = (
    st.lists(short_lines, max_size=10)
    .flatmap(lambda lines: st.lists(long_lines, max_size=2).map(lambda long: [*long, *lines]))
    .flatmap(st.permutations)
)


@pytest.fixture(scope="module")
def trained(trained_dir: Path) -> TrainedModel:
    return load_trained(str(trained_dir))


@pytest.fixture(scope="module")
def translator(trained: TrainedModel) -> Translator:
    settings = DecodeHParams(beam_size=2, batch_size=1)
    return Translator(
        trained.model, trained.vocabs, settings.resolve(trained.hparams), jit_compile=False
    )


@pytest.fixture(scope="module")
def problem() -> Problem:
    return registry.problem("translate_number_words_en_de")


def file_bytes(lines: list[str], bom: bool, crlf: bool, final_break: bool) -> bytes:
    """The lines as a UTF-8 file; a last empty line always gets its line break."""
    text = ("\r\n" if crlf else "\n").join(lines)
    if lines and (final_break or not lines[-1]):
        text += "\r\n" if crlf else "\n"
    return (("\ufeff" if bom else "") + text).encode("utf-8")


def interactive_lines(
    translator: Translator, data: bytes, problem: Problem
) -> tuple[int, list[str]]:
    """What decode_interactive answers to `data` piped in: (lines read, output lines)."""
    out = io.StringIO()
    count = decode_interactive(translator, io.BytesIO(data), out, problem)
    return count, out.getvalue().split("\n")[:-1]


@few_examples(10)
@given(
    lines=hostile_lines,
    bom=st.booleans(),
    crlf=st.booleans(),
    final_break=st.booleans(),
)
@example(lines=[], bom=False, crlf=False, final_break=True)
@example(
    lines=["\ufeff", "\x00", "", "one\u2028two", "x\x85y"], bom=True, crlf=True, final_break=False
)
def test_file_and_interactive_modes_give_one_line_per_input_line(
    translator: Translator,
    trained: TrainedModel,
    problem: Problem,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    lines: list[str],
    bom: bool,
    crlf: bool,
    final_break: bool,
) -> None:
    from_file, to_file = tmp_path / "in.txt", tmp_path / "out.txt"
    if bom and not lines:  # A byte order mark alone is a file of one line: the mark.
        lines = [""]
    data = file_bytes(lines, bom, crlf, final_break)
    from_file.write_bytes(data)

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        decoded = decode_file(translator, str(from_file), str(to_file), problem=problem)

    written = to_file.read_bytes().decode("utf-8")
    assert written.count("\n") == len(lines) == len(decoded.translations)
    outputs = written.split("\n")[:-1]
    read = [("\ufeff" if bom and number == 0 else "") + line for number, line in enumerate(lines)]
    tokens = [len(trained.vocabs["inputs"].encode(line)) for line in read]
    for line, count, output in zip(read, tokens, outputs, strict=True):
        assert not any(character in LINE_BREAKS for character in output), repr(output)
        if count == 0:  # Nothing the model reads.
            assert output == "", (line, output)
    # What was cut, or read as nothing though not blank, is counted in the log.
    unread = sum(1 for line, count in zip(read, tokens, strict=True) if line.strip() and not count)
    cut = sum(count > trained.hparams.max_length - 1 for count in tokens)
    assert (f"{unread} input(s) hold no text the vocabulary reads" in caplog.text) == bool(unread)
    assert (f"{cut} input(s) longer than max_length" in caplog.text) == bool(cut)
    assert interactive_lines(translator, data, problem) == (len(lines), outputs)


@few_examples(20)
@given(st.lists(st.binary(max_size=4).map(lambda raw: raw.replace(b"\n", b"")), max_size=10))
@example([b"forty\xff", b"", b"\xef\xbb\xbfone", b"\xc3", b"two\r", b"\xed\xa0\x80"])
def test_bytes_that_are_not_utf8_are_refused_in_files_and_answered_interactively(
    translator: Translator,
    problem: Problem,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    lines: list[bytes],
) -> None:
    from_file, to_file = tmp_path / "in.txt", tmp_path / "out.txt"
    data = b"".join(line + b"\n" for line in lines)
    from_file.write_bytes(data)
    to_file.write_text("the user's earlier outputs\n")
    bad = [number for number, line in enumerate(lines, start=1) if not _is_utf8(line)]

    if bad:
        with pytest.raises(UserError, match=f"line {bad[0]}: invalid UTF-8"):
            decode_file(translator, str(from_file), str(to_file), problem=problem)
        assert to_file.read_text() == "the user's earlier outputs\n"
    else:
        decode_file(translator, str(from_file), str(to_file), problem=problem)
        assert to_file.read_text(encoding="utf-8").count("\n") == len(lines)

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        count, outputs = interactive_lines(translator, data, problem)
    assert count == len(outputs) == len(lines)
    for number in bad:
        assert outputs[number - 1] == ""
        assert f"Input line {number} is not UTF-8" in caplog.text
    assert caplog.text.count("is not UTF-8") == len(bad)


@few_examples(12)
@given(
    st.lists(
        st.one_of(short_lines, st.sampled_from(["(", ")NP", "[", "{}", "-LRB-", "a(b)c", "\\"])),
        max_size=12,
    )
)
def test_a_parser_writes_one_tree_over_the_words_of_every_line(
    translator: Translator, lines: list[str]
) -> None:
    # Whatever the (here untrained for parsing) model outputs, each line's tree
    # holds exactly the line's words, brackets escaped; a line with none stays empty.
    parser = registry.problem("parsing_english_wsj16k")
    translations = translate_lines(translator, lines, parser)
    assert len(translations) == len(lines)
    for line, translation in zip(lines, translations, strict=True):
        words = escape_words(line)
        if words:
            assert parse_tree(translation.text).words() == words
        else:
            assert translation.text == ""


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.fixture(scope="module")
def serving(trained: TrainedModel, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The exported SavedModel's serving function, loaded as TF Serving would load it.

    The search is XLA-compiled, as t2t-exporter's default --xla=full compiles it.
    """
    export_dir = tmp_path_factory.mktemp("hostile_export")
    settings = DecodeHParams(beam_size=1).resolve(trained.hparams)
    version_dir = export_translator(trained, str(export_dir), settings.search, jit_compile=True)
    return tf.saved_model.load(version_dir).signatures[SIGNATURE]


# Each batch ends with a line longer than max_length, so that every batch of
# SERVED_BATCH has the same shape and the search is compiled once.
SERVED_BATCH = 8
LONG_LINE = b"seven " * 400
serving_inputs = st.lists(
    st.one_of(st.binary(max_size=12), short_lines.map(str.encode), long_lines.map(str.encode)),
    min_size=SERVED_BATCH - 1,
    max_size=SERVED_BATCH - 1,
).map(lambda inputs: [*inputs, LONG_LINE])


@settings(max_examples=6, deadline=None)
@given(serving_inputs)
@example([])
@example(
    [
        b"",
        b"   ",
        b"\x00",
        b"\xff\xfe",
        b"\xef\xbb\xbf",
        "a\u2028b".encode(),
        b"x" * 10**5,
        LONG_LINE,
    ]
)
def test_saved_model_answers_every_batch_one_output_per_input(
    serving: Any, inputs: list[bytes]
) -> None:
    results = serving(inputs=tf.constant(inputs, tf.string, shape=[len(inputs)]))

    outputs, scores = results["outputs"].numpy(), results["scores"].numpy()
    assert outputs.shape == scores.shape == (len(inputs),)
    assert np.isfinite(scores).all()
    for output in outputs:
        text = output.decode("utf-8")
        assert not any(character in LINE_BREAKS for character in text), repr(text)
