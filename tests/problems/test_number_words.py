"""English to German number words: the words, and the problem end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2t_keras import registry
from t2t_keras.models import TransformerHParams
from t2t_keras.problems.number_words import english, german


@pytest.mark.parametrize(
    ("number", "en", "de"),
    [
        (0, "zero", "null"),
        (1, "one", "eins"),
        (16, "sixteen", "sechzehn"),
        (21, "twenty-one", "einundzwanzig"),
        (30, "thirty", "dreißig"),
        (101, "one hundred one", "einhunderteins"),
        (1001, "one thousand one", "eintausendeins"),
        (101_000, "one hundred one thousand", "einhunderteintausend"),
        (342_001, "three hundred forty-two thousand one", "dreihundertzweiundvierzigtausendeins"),
        (
            999_999,
            "nine hundred ninety-nine thousand nine hundred ninety-nine",
            "neunhundertneunundneunzigtausendneunhundertneunundneunzig",
        ),
    ],
)
def test_number_words(number: int, en: str, de: str) -> None:
    assert (english(number), german(number)) == (en, de)


def test_problem_generates_a_sentencepiece_vocab_and_batches(tmp_path: Path) -> None:
    problem = registry.problem("translate_number_words_en_de")
    problem.num_samples = {"train": 2000, "dev": 100, "test": 100}
    problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    encoders = problem.feature_encoders(str(tmp_path))
    assert encoders["inputs"] is not None and 50 < encoders["targets"].vocab_size <= 300
    sample = next(problem.generate_samples("", "", "test"))
    assert (
        encoders["targets"].decode(encoders["targets"].encode(sample["targets"]))
        == sample["targets"]
    )
    hparams = TransformerHParams(batch_size=512, max_length=64)
    batch = next(
        iter(problem.dataset("test", hparams.batching(), str(tmp_path), deterministic=True))
    )
    assert batch["inputs"].shape[0] * batch["inputs"].shape[1] <= 512
