"""An even, seeded sample of a stream of sentences, in memory bounded by the sample.

A vocabulary trained on a corpus's first lines sees only its first domain:
WMT14 En-De's first million lines are all Europarl, before Common Crawl and
News Commentary. `sample_evenly` reads the whole stream once and keeps a
uniform sample of it (reservoir sampling), the same one for the same stream
and seed.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True)
class SentenceSample:
    """Sentences drawn evenly from a stream, and how many it held.

    Attributes:
      sentences: the sample, in the stream's order when it is the whole stream.
      seen: the stream's non-blank sentences, all of which had the same chance.
    """

    sentences: list[str]
    seen: int

    def describe(self) -> str:
        """E.g. "1,000,000 sentences sampled evenly from 9,000,000"."""
        if len(self.sentences) == self.seen:
            return f"all {self.seen:,} sentences"
        return f"{len(self.sentences):,} sentences sampled evenly from {self.seen:,}"


def sample_evenly(sentences: Iterable[str], size: int, seed: int) -> SentenceSample:
    """Keeps `size` of the non-blank sentences, each equally likely to be kept.

    The stream is read to its end; at most `size` sentences are held at once.
    A stream of `size` sentences or fewer is kept whole and in order. The
    sample depends only on the stream and the seed.

    Args:
      sentences: the sentences, e.g. both sides of every training pair.
      size: the most sentences to keep; at least 1.
      seed: the random generator's seed.

    Returns:
      The sample and the number of non-blank sentences seen.
    """
    if size < 1:
        raise ValueError(f"A sample needs room for at least one sentence, not {size}.")
    kept: list[str] = []
    rng = random.Random(seed)
    # Li's "Algorithm L": draw how many sentences to pass over before the next
    # replacement, rather than a random number for every sentence.
    weight = math.exp(math.log(_uniform(rng)) / size)
    next_kept = size + _gap(rng, weight)
    seen = 0
    for sentence in sentences:
        if not sentence.strip():
            continue
        if seen < size:
            kept.append(sentence)
        elif seen == next_kept:
            kept[rng.randrange(size)] = sentence
            weight *= math.exp(math.log(_uniform(rng)) / size)
            next_kept += 1 + _gap(rng, weight)
        seen += 1
    return SentenceSample(kept, seen)


def _gap(rng: random.Random, weight: float) -> int:
    """How many sentences pass before the next one replaces a kept one."""
    if weight >= 1.0:  # Only when the draw was exactly 1.0.
        return 0
    return math.floor(math.log(_uniform(rng)) / math.log1p(-weight))


def _uniform(rng: random.Random) -> float:
    """A draw in (0, 1]: its logarithm is finite."""
    return 1.0 - rng.random()
