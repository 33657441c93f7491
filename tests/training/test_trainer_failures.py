"""Damaged data and run files, limits, and a second trainer: each a clear outcome, nothing lost."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import struct
from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.data.damage import check_shard
from t2t_keras.data.vocab import SentencePieceVocabulary
from t2t_keras.errors import UserError
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.models.transformer_hparams import TransformerHParams
from t2t_keras.run.loading import load_trained
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.trainer import TrainResult, train

PROBLEM = "translate_number_words_en_de"
SHARD = f"{PROBLEM}-train-00001-of-00002"
VOCAB = f"vocab.{PROBLEM}.model"


def _train(
    data: Path, output_dir: Path, hparams: TransformerHParams | None = None, **config: object
) -> TrainResult:
    settings = {"eval_every_steps": 0, "eval_steps": 1, "eval_bleu_examples": 0, **config}
    return train(
        registry.problem(PROBLEM),
        "transformer",
        hparams or transformer_tiny(),
        str(data),
        str(output_dir),
        make_strategy("one_device"),
        TrainConfig(random_seed=1, xla="off", **settings),  # type: ignore[arg-type]
    )


@pytest.fixture
def data(number_words_data: Path, tmp_path: Path) -> Path:
    """A copy of the number-words data_dir, to damage."""
    return Path(shutil.copytree(number_words_data, tmp_path / "data"))


def _record_starts(path: Path) -> list[int]:
    """The byte offset of each record of an intact shard, from its framing."""
    content, starts, offset = path.read_bytes(), [], 0
    while offset < len(content):
        starts.append(offset)
        (length,) = struct.unpack("<Q", content[offset : offset + 8])
        offset += 12 + length + 4
    return starts


def _flip_two_bytes_of_a_record(shard: Path) -> tuple[int, int, int]:
    """Damages the payload of the record a third into the shard: (its index, offset, records)."""
    starts = _record_starts(shard)
    index = len(starts) // 3
    content = bytearray(shard.read_bytes())
    for at in (starts[index] + 14, starts[index] + 17):
        content[at] ^= 0xFF
    shard.write_bytes(bytes(content))
    return index, starts[index], len(starts)


def test_a_damaged_shard_is_named_or_skipped_and_counted(
    data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shard = data / SHARD
    index, offset, records = _flip_two_bytes_of_a_record(shard)
    (dev,) = data.glob(f"{PROBLEM}-dev-*")
    dev.write_bytes(b"")  # An empty dev split: a warning, no evaluation.

    with pytest.raises(UserError) as stopped:
        _train(data, tmp_path / "stops", train_steps=2)
    message = str(stopped.value)
    assert f"{shard} has a corrupted record at byte {offset}" in message
    assert f"{index} records read before it, {records - index} lost" in message
    assert "--skip_corrupt_records" in message and "\n" not in message

    with caplog.at_level(logging.WARNING):
        result = _train(data, tmp_path / "skips", train_steps=2, skip_corrupt_records=True)
    assert result.step == 2 and result.eval == {}
    assert f"1 of 2 shards damaged, {records - index} records lost" in caplog.text
    assert "has no examples: nothing to evaluate on" in caplog.text


def test_a_truncated_shard_loses_at_least_the_cut_record(data: Path) -> None:
    shard = data / SHARD
    starts = _record_starts(shard)
    cut = starts[len(starts) // 2] + 20  # Inside a record.
    shard.write_bytes(shard.read_bytes()[:cut])
    damage = check_shard(str(shard))
    assert damage is not None
    assert (damage.kind, damage.offset, damage.records_read) == (
        "truncated",
        starts[len(starts) // 2],
        len(starts) // 2,
    )
    assert not damage.exact and "at least 1 lost" in damage.describe()
    assert check_shard(str(data / f"{PROBLEM}-train-00000-of-00002")) is None


def test_train_steps_already_reached_trains_and_rewrites_nothing(
    trained_dir: Path, number_words_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    output_dir = Path(shutil.copytree(trained_dir, tmp_path / "train"))

    def written() -> dict[str, int]:
        files = (p for p in output_dir.rglob("*") if p.is_file() and p.name != ".lock")
        return {str(p): p.stat().st_mtime_ns for p in files}

    before = written()
    for steps in (200, 150):
        with caplog.at_level(logging.WARNING):
            result = _train(number_words_data, output_dir, train_steps=steps)
        assert (result.first_step, result.step) == (200, 200)
        assert result.checkpoint == str(output_dir / "ckpt-200")
    assert "already at step 200, at or past --train_steps=150: nothing to train" in caplog.text
    assert written() == before
    with pytest.raises(UserError, match="--train_steps must be at least 1"):
        TrainConfig(train_steps=0)


def test_examples_and_batches_beyond_the_limits_stop_before_any_step(
    number_words_data: Path, tmp_path: Path
) -> None:
    # Every example has a piece and EOS: none fits in max_length=1.
    too_short = dataclasses.replace(transformer_tiny(), max_length=1)
    with pytest.raises(UserError, match="has no example of at most max_length=1 tokens"):
        _train(number_words_data, tmp_path / "short", too_short, train_steps=1)
    small_batches = dataclasses.replace(transformer_tiny(), batch_size=100, max_length=256)
    with pytest.raises(UserError, match="batch_size=100 is smaller than max_length=256"):
        _train(number_words_data, tmp_path / "batches", small_batches, train_steps=1)
    assert not list(tmp_path.glob("*/ckpt-*"))


def _other_vocabulary(path: Path) -> None:
    sentences = [f"{word} {other}" for word in ("alpha", "beta", "gamma") for other in "xyz"]
    SentencePieceVocabulary.train(sentences, str(path), vocab_size=20)


def test_vocabularies_that_are_not_the_trained_ones_are_refused_before_any_step(
    trained_dir: Path, data: Path, tmp_path: Path
) -> None:
    (data / VOCAB).write_bytes(b"not a sentencepiece model")
    with pytest.raises(UserError, match=f"{VOCAB} is not a SentencePiece model"):
        _train(data, tmp_path / "fresh", train_steps=1)
    assert not list((tmp_path / "fresh").glob("ckpt-*"))

    output_dir = Path(shutil.copytree(trained_dir, tmp_path / "train"))
    _other_vocabulary(data / VOCAB)
    with pytest.raises(UserError, match=r"vocab_size=\d+, but the checkpoints .* vocab_size="):
        _train(data, output_dir, train_steps=300)
    assert not (output_dir / "ckpt-300.index").exists()

    _other_vocabulary(output_dir / VOCAB)  # The copy the decoder reads.
    with pytest.raises(UserError, match=r"has \d+ ids, but the model was trained with \d+ ids"):
        load_trained(str(output_dir), use_xla=False)


@pytest.mark.parametrize("name", ["run.json", "hparams.json"])
def test_damaged_run_files_are_named(
    trained_dir: Path, number_words_data: Path, tmp_path: Path, name: str
) -> None:
    output_dir = Path(shutil.copytree(trained_dir, tmp_path / "train"))
    text = (output_dir / name).read_bytes()
    (output_dir / name).write_bytes(text[: len(text) // 2])  # Cut short.
    expected = f"{output_dir / name} cannot be read: it is not valid JSON"
    with pytest.raises(UserError, match=expected):
        load_trained(str(output_dir), use_xla=False)
    with pytest.raises(UserError, match=expected):
        _train(number_words_data, output_dir, train_steps=300)
    (output_dir / name).write_bytes(b"[1, 2]")
    with pytest.raises(UserError, match=f"{name} cannot be read: it holds no JSON object"):
        load_trained(str(output_dir), use_xla=False)
