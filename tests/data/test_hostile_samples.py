"""A user's problem yielding hostile samples through datagen: every sample kept or skipped
by a stated rule, each skip counted, the vocabulary and the shards whole.

The rules (`t2t_keras.data.text_problem`): a side over max_chars characters,
or text that is not valid Unicode, is skipped; a training sample with a blank
side is skipped; everything else is kept, NUL bytes and controls included.
Raw corpus files (`t2t_keras.data.corpus`) are read as UTF-8 or refused,
naming the file and the first line that is not.
"""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hostile_bytes import first_bad_line, line_bytes
from hypothesis import HealthCheck, example, given
from hypothesis import strategies as st
from hypothesis_profiles import ci_budget

from t2t_keras.data import Text2TextProblem, corpus, records
from t2t_keras.data.ids import EOS_ID
from t2t_keras.data.text_problem import Sample, SampleCounts
from t2t_keras.errors import UserError


class HostileCorpus(Text2TextProblem):
    """Yields the samples it is given; keeps its dev text, so nothing can hide in ids."""

    data_name = "hostile_corpus"
    approx_vocab_size = 60
    dataset_splits = {"train": 2, "dev": 1}  # noqa: RUF012
    keep_text = True

    def __init__(self, samples: dict[str, list[Sample]]) -> None:
        super().__init__()
        self.samples = samples

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        yield from self.samples[split]


# Enough ordinary text for a vocabulary, whatever else the corpus holds.
ORDINARY = [
    {"inputs": f"{number} one two three", "targets": f"{number} eins zwei drei"}
    for number in range(12)
]
MAX_CHARS = HostileCorpus.max_chars
texts = st.one_of(
    st.just(""),
    st.text(st.sampled_from(" \t\r\n\xa0\u3000\u2028\x85"), min_size=1, max_size=5),
    st.text(max_size=12),  # Any script, controls, NUL, U+FEFF; never a surrogate.
    st.lists(st.sampled_from(["\x00", "\ufeff", "a", "b ", "\r\n", "\u2029"]), max_size=6).map(
        "".join
    ),
    st.sampled_from(["x" * (MAX_CHARS + 1), "日本" * 50_000, "\x00" * 100_000, "ok " * 3_000]),
    st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2).map("bad: ".__add__),
)
samples = st.lists(st.fixed_dictionaries({"inputs": texts, "targets": texts}), max_size=6)


def expected(split_samples: list[Sample], split: str) -> tuple[list[Sample], SampleCounts]:
    """The samples the rules keep, and the counts the rules give."""
    counts, kept = SampleCounts(), []
    for sample in split_samples:
        inputs, targets = sample["inputs"], sample["targets"]
        if max(len(inputs), len(targets)) > MAX_CHARS:
            counts.too_long += 1
        elif any(0xD800 <= ord(c) <= 0xDFFF for c in inputs + targets):
            counts.not_unicode += 1
        elif split == "train" and not (inputs.strip() and targets.strip()):
            counts.blank += 1
        else:
            counts.kept += 1
            kept.append(sample)
    return kept, counts


def one_line(text: str) -> str:
    """A text as the kept dev text holds it: its line breaks made spaces."""
    return " ".join(text.splitlines())


@ci_budget(
    15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(train=samples, dev=samples, ordinary_dev=st.booleans())
@example(
    train=[{"inputs": "\ud800", "targets": "t"}, {"inputs": "x", "targets": "y \udfff"}],
    dev=[{"inputs": "\ud800", "targets": "t"}],
    ordinary_dev=True,
)
@example(
    train=[
        {"inputs": "", "targets": "x"},
        {"inputs": " \t", "targets": "y"},
        {"inputs": "a\x00b", "targets": "\x00"},
        {"inputs": "z" * 100_000, "targets": "long"},
        {"inputs": "bad \udcff", "targets": "t"},
    ],
    dev=[{"inputs": "", "targets": ""}, {"inputs": "a\u2028b\x85c", "targets": "\ufeffd\x00"}],
    ordinary_dev=False,
)
def test_every_sample_is_kept_or_skipped_and_counted(
    capsys: pytest.CaptureFixture[str],
    train: list[Sample],
    dev: list[Sample],
    ordinary_dev: bool,
) -> None:
    corpus = {"train": ORDINARY + train, "dev": (ORDINARY[:3] if ordinary_dev else []) + dev}
    problem = HostileCorpus(corpus)
    with tempfile.TemporaryDirectory() as root:
        data_dir = str(Path(root) / "data")
        kept_dev, dev_counts = expected(corpus["dev"], "dev")
        if not kept_dev:
            with pytest.raises(UserError, match="produced no dev samples") as refusal:
                problem.generate_data(data_dir, str(Path(root) / "tmp"))
            assert dev_counts.skipped(MAX_CHARS) in str(refusal.value)
            assert not list(Path(data_dir).glob("*dev*"))
            return
        problem.generate_data(data_dir, str(Path(root) / "tmp"))
        printed = capsys.readouterr().out
        for split in ("train", "dev"):
            counts = expected(corpus[split], split)[1]
            skipped = counts.skipped(MAX_CHARS)
            shards = problem.dataset_splits[split]
            line = f"wrote {counts.kept} {split} examples to {shards} shard(s)"
            assert (f"{line}; skipped {skipped}." if skipped else f"{line}.") in printed
            assert_shards_whole(problem, data_dir, split, counts.kept)
        sources, references = zip(*problem.text_examples(data_dir, "dev", -1), strict=True)
        assert sorted(sources) == sorted(one_line(s["inputs"]) for s in kept_dev)
        assert sorted(references) == sorted(one_line(s["targets"]) for s in kept_dev)


def assert_shards_whole(problem: HostileCorpus, data_dir: str, split: str, count: int) -> None:
    """The split's records number `count`, each side ids of the vocabulary ending with EOS."""
    vocab_size = problem.feature_encoders(data_dir)["inputs"].vocab_size
    paths = problem.data_files(data_dir, split)
    assert records.count_records(paths) == count
    for record in tf.data.TFRecordDataset(paths):
        for ids in records.parse_example(record).values():
            ids = ids.numpy()
            assert ids[-1] == EOS_ID and np.all((ids >= 0) & (ids < vocab_size))


def test_training_text_the_vocabulary_reads_as_nothing_is_refused(tmp_path: Path) -> None:
    # SentencePiece drops controls and U+FEFF: no character is left to learn from.
    only_controls = [{"inputs": "\x1b\x7f", "targets": "\ufeff"}] * 3
    problem = HostileCorpus({"train": only_controls, "dev": ORDINARY[:2]})
    with pytest.raises(UserError, match="No characters to train .*vocab.hostile_corpus.model"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    assert not list((tmp_path / "data").iterdir())


def test_a_sample_that_is_not_a_dict_of_strings_is_refused(tmp_path: Path) -> None:
    for sample in [("inputs", "targets"), {"inputs": "a", "targets": None}]:
        problem = HostileCorpus({"train": [*ORDINARY, sample], "dev": ORDINARY[:2]})  # type: ignore[list-item]
        with pytest.raises(UserError, match=r'must yield \{"inputs": str, "targets": str\}'):
            problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))


class LongLineCorpus(HostileCorpus):
    """A problem that allows lines of 100,000 characters."""

    data_name = "long_line_corpus"
    max_chars = 200_000


def test_lines_of_100k_characters_are_kept_where_the_problem_allows_them(tmp_path: Path) -> None:
    long_sample = {"inputs": "seven " * 16_000 + "x" * 4_000, "targets": "sieben " * 14_000}
    problem = LongLineCorpus({"train": [*ORDINARY, long_sample], "dev": [long_sample]})
    problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))
    assert_shards_whole(problem, str(tmp_path / "data"), "train", len(ORDINARY) + 1)
    assert problem.text_examples(str(tmp_path / "data"), "dev", -1) == [
        (long_sample["inputs"], long_sample["targets"])
    ]


def test_a_vocabulary_with_only_lines_too_long_for_sentencepiece_is_refused(
    tmp_path: Path,
) -> None:
    problem = LongLineCorpus({"train": [{"inputs": "x" * 100_000, "targets": "y" * 100_000}]})
    with pytest.raises(UserError, match="over 4192 bytes"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"))


# The two sides of a parallel corpus, as many lines each.
raw_corpora = st.integers(0, 5).flatmap(
    lambda count: st.tuples(
        *[
            st.lists(
                line_bytes(b"one two\r", "zw\u00f6lf \u2028".encode()),
                min_size=count,
                max_size=count,
            )
        ]
        * 2
    )
)


@ci_budget(30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw_corpora, st.booleans())
@example(([b"one", b"two \xed\xa0\x80"], [b"eins", b"zwei"]), False)
@example(([b"one"], ["\udcff".encode("utf-8", "surrogatepass")]), True)
def test_corpus_files_are_read_up_to_the_first_line_that_is_not_utf8_which_is_named(
    tmp_path: Path, sides: tuple[list[bytes], list[bytes]], gzipped: bool
) -> None:
    paths = []
    for name, lines in zip(("train.en", "train.de"), sides, strict=True):
        data = b"".join(line + b"\n" for line in lines)
        path = tmp_path / (f"{name}.gz" if gzipped else name)
        path.write_bytes(gzip.compress(data) if gzipped else data)
        paths.append(str(path))
    # Line by line, the source side first: the first bad line stops the reading.
    bad_lines = [first_bad_line(lines) or len(lines) + 1 for lines in sides]
    stop = min(bad_lines)
    pairs: list[tuple[str, str]] = []
    try:
        pairs.extend(corpus.read_parallel(*paths))
    except UserError as error:
        named = paths[bad_lines.index(stop)]
        assert str(error).startswith(f"{named}, line {stop}: invalid UTF-8"), error
    else:
        assert stop > len(sides[0])
    texts = [[line.decode("utf-8").rstrip("\r") for line in lines[: stop - 1]] for lines in sides]
    assert pairs == list(zip(*texts, strict=True))
