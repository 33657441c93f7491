"""English number words to German number words: a translation task with no download.

"three hundred forty-two thousand one" -> "dreihundertzweiundvierzigtausendeins".
Numbers below a million, drawn with a seeded generator (small ones more often),
encoded with a real SentencePiece vocabulary: the embedded default for demos.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from t2t_keras import registry
from t2t_keras.data.text_problem import Sample, Text2TextProblem

_EN_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_EN_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_DE_ONES = [
    "null",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
    "dreizehn",
    "vierzehn",
    "fünfzehn",
    "sechzehn",
    "siebzehn",
    "achtzehn",
    "neunzehn",
]
_DE_TENS = [
    "_",
    "_",
    "zwanzig",
    "dreißig",
    "vierzig",
    "fünfzig",
    "sechzig",
    "siebzig",
    "achtzig",
    "neunzig",
]


def english(number: int) -> str:
    """English words for 0 <= number < 1,000,000."""
    if number < 20:
        return _EN_ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _EN_TENS[tens] + (f"-{_EN_ONES[ones]}" if ones else "")
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{_EN_ONES[hundreds]} hundred" + (f" {english(rest)}" if rest else "")
    thousands, rest = divmod(number, 1000)
    return f"{english(thousands)} thousand" + (f" {english(rest)}" if rest else "")


def german(number: int) -> str:
    """German words for 0 <= number < 1,000,000, written as one word."""
    if number < 20:
        return _DE_ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return (f"{_multiplier(ones)}und" if ones else "") + _DE_TENS[tens]
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{_multiplier(hundreds)}hundert" + (german(rest) if rest else "")
    thousands, rest = divmod(number, 1000)
    return f"{_multiplier(thousands)}tausend" + (german(rest) if rest else "")


def _multiplier(number: int) -> str:
    """The form before "und", "hundert", "tausend": "ein", not "eins"."""
    words = german(number)
    return words[: -len("s")] if words.endswith("eins") else words


@registry.register_problem
class TranslateNumberWordsEnDe(Text2TextProblem):
    """English number words to German ones, below a million (no download)."""

    approx_vocab_size = 300
    num_samples = {"train": 20_000, "dev": 500, "test": 500}  # noqa: RUF012
    dataset_splits = {"train": 2, "dev": 1, "test": 1}  # noqa: RUF012

    def eval_metrics(self) -> list[str]:
        """Most outputs are one or two words: BLEU says little, whole-output matches do."""
        return ["exact_match"]

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        rng = random.Random(f"{self.data_name}/{split}")
        for _ in range(self.num_samples[split]):
            number = int(10 ** rng.uniform(0, 6)) - 1  # Small numbers as often as big ones.
            yield {"inputs": english(number), "targets": german(number)}
