"""text2text_tmpdir: a user's plain-text parallel corpus, and every way it can be wrong."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.data import records
from t2t_keras.errors import UserError

PAIRS = [(f"sentence number {i} in english", f"satz nummer {i} auf deutsch") for i in range(300)]


def write_corpus(tmp_dir: Path, split: str, pairs, source_extra: bytes = b"") -> None:
    tmp_dir.mkdir(exist_ok=True)
    (tmp_dir / f"{split}.src").write_bytes(
        "".join(f"{source}\n" for source, _ in pairs).encode() + source_extra
    )
    (tmp_dir / f"{split}.tgt").write_text("".join(f"{target}\n" for _, target in pairs))


def generate(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    registry.problem("text2text_tmpdir").generate_data(str(data_dir), str(tmp_path / "tmp"))
    return data_dir


def test_a_plain_text_corpus_becomes_shards(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", PAIRS)
    write_corpus(tmp_path / "tmp", "dev", PAIRS[:20])
    data_dir = generate(tmp_path)
    problem = registry.problem("text2text_tmpdir")
    assert records.count_records(problem.data_files(str(data_dir), "train")) == 300
    assert records.count_records(problem.data_files(str(data_dir), "dev")) == 20
    vocab = problem.feature_encoders(str(data_dir))["inputs"]
    assert vocab.decode(vocab.encode(PAIRS[7][0])) == PAIRS[7][0]


def test_the_vocabulary_is_drawn_from_the_whole_corpus_and_the_log_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 300 pairs of one domain, then 300 of another, and room for a third of the sentences.
    other = [(f"ölpreis {i} über straßen", f"größere {i} äpfel") for i in range(300)]
    write_corpus(tmp_path / "tmp", "train", PAIRS + other)
    write_corpus(tmp_path / "tmp", "dev", PAIRS[:20])
    problem_class = type(registry.problem("text2text_tmpdir"))
    monkeypatch.setattr(problem_class, "max_vocab_sentences", 400)
    data_dir = generate(tmp_path)
    assert "on 400 sentences sampled evenly from 1,200." in capsys.readouterr().out
    vocab = registry.problem("text2text_tmpdir").feature_encoders(str(data_dir))["inputs"]
    for source, target in (PAIRS[0], other[-1]):
        assert vocab.decode(vocab.encode(source)) == source
        assert vocab.decode(vocab.encode(target)) == target


def test_missing_file_names_it_and_the_layout(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", PAIRS)
    with pytest.raises(UserError, match=r"dev\.src is missing: text2text_tmpdir reads"):
        generate(tmp_path)


def test_empty_corpus(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", [])
    with pytest.raises(UserError, match="produced no train samples"):
        generate(tmp_path)


def test_line_count_mismatch(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", PAIRS, source_extra=b"one line too many\n")
    with pytest.raises(UserError, match=r"different line counts: .*train\.tgt ends at line 300"):
        generate(tmp_path)


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", PAIRS, source_extra=b"caf\xe9\n")
    (tmp_path / "tmp" / "train.tgt").write_text("".join(f"{t}\n" for _, t in PAIRS) + "cafe\n")
    with pytest.raises(UserError, match=r"train\.src, line 301: invalid UTF-8"):
        generate(tmp_path)


def test_absurdly_long_lines_are_skipped_and_counted(tmp_path: Path, caplog) -> None:
    long_pair = ("x" * 20_000, "y")
    write_corpus(tmp_path / "tmp", "train", [*PAIRS, long_pair])
    write_corpus(tmp_path / "tmp", "dev", PAIRS[:20])
    with caplog.at_level(logging.WARNING):
        data_dir = generate(tmp_path)
    assert "skipped 1 sample(s) longer than 10000 characters" in caplog.text
    problem = registry.problem("text2text_tmpdir")
    assert records.count_records(problem.data_files(str(data_dir), "train")) == 300


def test_test_split_is_optional(tmp_path: Path) -> None:
    write_corpus(tmp_path / "tmp", "train", PAIRS)
    write_corpus(tmp_path / "tmp", "dev", PAIRS[:20])
    data_dir = generate(tmp_path)
    assert not list(data_dir.glob("text2text_tmpdir-test-*"))
    write_corpus(tmp_path / "tmp", "test", PAIRS[:10])
    data_dir = generate(tmp_path)  # Only the new split is written.
    problem = registry.problem("text2text_tmpdir")
    assert records.count_records(problem.data_files(str(data_dir), "test")) == 10


def test_blank_training_pairs_are_skipped_and_counted(tmp_path: Path, caplog) -> None:
    write_corpus(tmp_path / "tmp", "train", [*PAIRS, ("", "nur ziel"), ("only source", " ")])
    write_corpus(tmp_path / "tmp", "dev", PAIRS[:20])
    with caplog.at_level(logging.WARNING):
        data_dir = generate(tmp_path)
    assert "skipped 2 sample(s) with a blank side" in caplog.text
    problem = registry.problem("text2text_tmpdir")
    assert records.count_records(problem.data_files(str(data_dir), "train")) == 300
