"""Hostile input through t2t-decoder's file and interactive modes, the exported SavedModel
and the Python runtimes.

Random text of every script, control characters, line separators other than
"\\n" (U+2028, U+0085, form feeds, lone "\\r"), byte order marks, NUL bytes,
empty, blank and 100,000-character lines, lone surrogates, and random bytes.
What each gives:

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
  - the Python runtimes (Translator, CTranslate2Translator, translate_lines):
    one translation per string, whatever it holds. A lone surrogate (a code
    point U+D800-U+DFFF, which no UTF-8 text can carry, as bytes decoded with
    errors="surrogateescape" leave) is read as U+FFFD, and the strings that
    held one are counted in a warning.

In file and interactive modes the search is a beam of 2, not XLA-compiled,
one sentence per batch, and the fuzzed lines are short or very long: few
distinct shapes, so few traces.
"""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from hostile_bytes import is_utf8, line_bytes
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras import registry
from t2t_keras.data.problem import Problem
from t2t_keras.data.trees import escape_words, parse_tree
from t2t_keras.errors import UserError
from t2t_keras.export.ctranslate2_export import read_info, search_defaults
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator
from t2t_keras.export.saved_model import SIGNATURE, export_translator
from t2t_keras.run.loading import TrainedModel, load_trained
from t2t_keras.search.settings import DecodeHParams
from t2t_keras.serving.file_decoding import decode_file, decode_interactive, translate_lines
from t2t_keras.serving.translator import SentenceTranslator, Translator

# A CTranslate2 export kept in the repository: the runtime's tests need no export of their own.
CTRANSLATE2_EXPORT = (
    Path(__file__).resolve().parents[1] / "fixtures" / "earlier_run" / "ctranslate2"
)

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
SURROGATES = re.compile("[\ud800-\udfff]")


def few_examples(count: int) -> settings:
    """Hypothesis settings for a test of `count` examples (in ci) that may take seconds each."""
    return ci_budget(
        count,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def lines_of(characters: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Short lines: empty, blank, or one or two odd characters, words or `characters`."""
    return st.one_of(
        st.just(""),
        st.text(st.sampled_from(" \t\xa0\u3000\u2028\x85"), min_size=1, max_size=4),  # Blank.
        st.lists(
            st.one_of(st.sampled_from(ODD_CHARACTERS), st.sampled_from(WORDS), characters),
            min_size=1,
            max_size=2,  # At most 7 tokens with EOS: one bucket width.
        ).map("".join),
    )


# What a Python string may hold: lone surrogates too.
short_lines = lines_of(st.characters(exclude_characters="\n"))
# What a UTF-8 file may hold: no surrogate (its bytes are test_bytes_that_are_not_utf8's).
utf8_lines = lines_of(st.characters(codec="utf-8", exclude_characters="\n"))
long_lines = st.builds(
    lambda piece, count: (piece * count)[:100_000],
    st.sampled_from(["seven ", "x", "日本", "\x00", " ", "\u2028"]),
    st.integers(3_000, 100_000),
)
hostile_lines = (
    st.lists(utf8_lines, max_size=10)
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
@given(st.lists(line_bytes(), max_size=10))
@example([b"forty\xff", b"", b"\xef\xbb\xbfone", b"\xc3", b"two\r", b"\xed\xa0\x80"])
@example(["one \ud800 two".encode("utf-8", "surrogatepass"), b"\xed\xa0\xbd\xed\xb8\x80"])
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
    bad = [number for number, line in enumerate(lines, start=1) if not is_utf8(line)]

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
@example(["\ud800"])  # CI drew it once (issue 41), and Translator.encode crashed.
@example(["(\udfff)", "one \ud83d\ude00", "", "\udc80 two"])
def test_a_parser_writes_one_tree_over_the_words_of_every_line(
    translator: Translator, caplog: pytest.LogCaptureFixture, lines: list[str]
) -> None:
    # Whatever the (here untrained for parsing) model outputs, each line's tree
    # holds exactly the line's words, brackets escaped, a lone surrogate read as
    # U+FFFD; a line with none stays empty.
    parser = registry.problem("parsing_english_wsj16k")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        translations = translate_lines(translator, lines, parser)
    assert len(translations) == len(lines)
    for line, translation in zip(lines, translations, strict=True):
        words = escape_words(SURROGATES.sub("\ufffd", line))
        if words:
            assert parse_tree(translation.text).words() == words
        else:
            assert translation.text == ""
    assert_surrogates_counted(lines, caplog.text)


@pytest.fixture(scope="module")
def ctranslate2_translator() -> CTranslate2Translator:
    decode_hparams = DecodeHParams(beam_size=2, batch_size=4)
    defaults = search_defaults(read_info(str(CTRANSLATE2_EXPORT)))
    return CTranslate2Translator(str(CTRANSLATE2_EXPORT), decode_hparams.resolve(defaults))


@pytest.mark.parametrize("runtime", ["tensorflow", "ctranslate2"])
@few_examples(10)
@given(sentences=st.lists(short_lines, max_size=8))
@example(sentences=["\ud800"])
@example(sentences=["one \ud800 two", "\udc80\udcff", "\ud83d\ude00", "", "seven", "\ufffd"])
def test_python_callers_get_one_translation_per_string_whatever_it_holds(
    translator: Translator,
    ctranslate2_translator: CTranslate2Translator,
    caplog: pytest.LogCaptureFixture,
    runtime: str,
    sentences: list[str],
) -> None:
    chosen: SentenceTranslator = translator if runtime == "tensorflow" else ctranslate2_translator
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        translations = chosen.translate(sentences)
    assert len(translations) == len(sentences)
    for sentence, translation in zip(sentences, translations, strict=True):
        translation.line(write_scores=True).encode("utf-8")  # Text any file can hold.
        if not sentence.strip():
            assert translation.texts == []
    assert_surrogates_counted(sentences, caplog.text)
    # The model reads each surrogate as U+FFFD.
    readable = [SURROGATES.sub("\ufffd", sentence) for sentence in sentences]
    assert chosen.encode(sentences) == chosen.encode(readable)


def assert_surrogates_counted(texts: list[str], log: str) -> None:
    """The log counts the texts holding lone surrogates in one warning, if any do."""
    held = sum(1 for text in texts if SURROGATES.search(text))
    assert (f"{held} input(s) held lone surrogates" in log) == bool(held), log


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
    st.one_of(
        st.binary(max_size=12),
        # A client's strings, lone surrogates as a lenient encoder writes them.
        short_lines.map(lambda line: line.encode("utf-8", "surrogatepass")),
        long_lines.map(str.encode),
    ),
    min_size=SERVED_BATCH - 1,
    max_size=SERVED_BATCH - 1,
).map(lambda inputs: [*inputs, LONG_LINE])


@ci_budget(6, deadline=None)
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
@example(
    [
        b"\xed\xa0\x80",
        "one \udfff".encode("utf-8", "surrogatepass"),
        "\ud83d\ude00 seven".encode("utf-8", "surrogatepass"),
        b"\xed\xa0",
        b"two",
        b"",
        b"\xed\xbf\xbf\xed\xa0\x80",
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
