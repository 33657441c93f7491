"""sample_evenly: every sentence of the stream equally likely, the same draw for the same seed."""

from __future__ import annotations

import collections

import pytest

from t2t_keras.data.sentence_sample import sample_evenly


def test_a_stream_that_fits_is_kept_whole_in_order_without_blanks() -> None:
    sample = sample_evenly(["a", " ", "b", "", "c"], 3, seed=1)
    assert sample.sentences == ["a", "b", "c"]
    assert sample.seen == 3
    assert sample.describe() == "all 3 sentences"


def test_a_long_stream_is_read_to_its_end_and_sampled_from_every_part() -> None:
    sample = sample_evenly((str(i) for i in range(100_000)), 1_000, seed=1)
    assert sample.seen == 100_000
    assert len(sample.sentences) == len(set(sample.sentences)) == 1_000
    tenths = collections.Counter(int(sentence) // 10_000 for sentence in sample.sentences)
    # 100 expected in each tenth of the stream; a first-lines sample puts all 1,000 in the first.
    assert sorted(tenths) == list(range(10))
    assert all(60 < count < 140 for count in tenths.values())
    assert sample.describe() == "1,000 sentences sampled evenly from 100,000"


def test_every_sentence_is_equally_likely_to_be_kept() -> None:
    kept = collections.Counter()
    for seed in range(2_000):
        kept.update(sample_evenly((str(i) for i in range(20)), 5, seed).sentences)
    # Each of the 20 is kept 2,000 * 5/20 = 500 times on average (sd ~19).
    assert len(kept) == 20
    assert all(420 < count < 580 for count in kept.values()), kept


def test_the_seed_decides_the_sample() -> None:
    def draw(seed: int) -> list[str]:
        return sample_evenly((str(i) for i in range(10_000)), 100, seed).sentences

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_a_sample_needs_room() -> None:
    with pytest.raises(ValueError, match="at least one sentence"):
        sample_evenly(["a"], 0, seed=1)
