"""Decoding settings: `--decode_hparams="beam_size=4,alpha=0.6,..."`, and their resolution.

`DecodeHParams` is what a user writes: unset search settings are None and take
the values of the hparams set the model was trained with (the paper's beam 4,
alpha 0.6 and input length + 50 for translation; beam 21, alpha 0.3 and + 300
for parsing). sampling=true draws outputs instead of searching for the best
(`search.sampling`): beam_size is then 1, and temperature, top_k, top_p, seed
and samples_per_input, refused without it, say how. `DecodeHParams.resolve` is the one place they are filled in: it
returns `DecodeSettings`, every value decided, which the binaries build once
and everything below them (`Decoder`, the translators, the exports, the
trainer's evaluation, the benchmark) takes as it is.

This module imports no TensorFlow: the binaries' --help lists these fields.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams, HParamsError
from t2t_keras.modes import LENGTH_PENALTIES

# The beam search's stopping rules (see `beam.beam_search`); defined here, where
# no TensorFlow is needed to check a --decode_hparams.
STOPPING_RULES = ("first_k", "best_possible")
# The search settings that come from the model's hparams set when unset.
_FROM_MODEL = ("beam_size", "alpha", "extra_length", "slot_extra_length", "length_penalty")
# The settings that shape sampling, refused without sampling=true.
SAMPLING_SETTINGS = ("temperature", "top_k", "top_p", "seed", "samples_per_input")
# The largest seed: the search mixes it into 32-bit hashes (`sampling`).
MAX_SEED = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class SearchDefaults:
    """What unset search settings take: the hparams set's beam_size, alpha, extra_length,
    slot_extra_length and length_penalty.

    A model's TransformerHParams holds them; a CTranslate2 export stores them.
    """

    beam_size: int
    alpha: float
    extra_length: int
    # None: extra_length (one pass); exports made before the field have none.
    slot_extra_length: int | None = None
    # "gnmt" for exports and hparams made before the field.
    length_penalty: str = "gnmt"

    @classmethod
    def of(cls, model_hparams: SearchDefaults | SearchSettings | HParams) -> SearchDefaults:
        """The defaults a model's hparams (or an export's stored ones) give; read only here."""
        given: dict[str, Any] = {name: getattr(model_hparams, name, None) for name in _FROM_MODEL}
        if given["length_penalty"] is None:  # hparams without the field: today's.
            del given["length_penalty"]
        return cls(**given)


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The search's settings, every one decided (`DecodeHParams` documents each)."""

    beam_size: int
    alpha: float
    length_penalty: str
    extra_length: int
    slot_extra_length: int
    return_beams: bool
    min_length: int
    stopping: str
    tree_constraint: bool
    sampling: bool
    temperature: float
    top_k: int
    top_p: float
    seed: int
    samples_per_input: int

    @property
    def num_returned(self) -> int:
        """Hypotheses returned per sentence: samples_per_input when sampling, else
        beam_size with return_beams, else 1."""
        if self.sampling:
            return self.samples_per_input
        return self.beam_size if self.return_beams else 1

    @property
    def is_greedy(self) -> bool:
        """Beam size 1 stopping at the first finished hypothesis: greedy search exactly."""
        return self.beam_size == 1 and self.stopping == "first_k"


@dataclasses.dataclass(frozen=True)
class DecodeSettings:
    """Resolved decoding settings: the search's, and how t2t-decoder batches and writes.

    Built only by `DecodeHParams.resolve`.
    """

    search: SearchSettings
    batch_size: int
    write_beam_scores: bool
    num_samples: int


# The names of the search's settings, which an export fixes.
SEARCH_SETTINGS = tuple(field.name for field in dataclasses.fields(SearchSettings))


@dataclasses.dataclass(frozen=True)
class DecodeHParams(HParams):
    """How t2t-decoder searches, batches and writes."""

    beam_size: int | None = None  # hypotheses kept per sentence; 1 = greedy; None = the set's
    alpha: float | None = None  # length penalty exponent; None = the hparams set's
    # score / ((5 + n) / 6) ** alpha ("gnmt") or n ** alpha ("length"); None = the set's
    length_penalty: str | None = None
    extra_length: int | None = None  # output may exceed input by this many tokens; None = set's
    # positions past the input width (or width / 4) the slots first hold; None = the set's
    # (None there: every position extra_length allows, one pass)
    slot_extra_length: int | None = None
    min_length: int = 1  # fewest output tokens for a non-empty input; 0 lets EOS come first
    stopping: str = "first_k"  # beam stops at K finished ("first_k") or when none can win
    tree_constraint: bool = True  # parsing: only well-formed trees over the input's words
    batch_size: int = 64  # sentences searched at once: our search's slots, a CTranslate2 batch
    return_beams: bool = False  # write every beam, tab-separated, best first
    write_beam_scores: bool = False  # append the score(s) after the output, tab-separated
    num_samples: int = 0  # decode only the split's first N examples; 0 = all of them
    sampling: bool = False  # draw each token from the model's distribution (beam_size 1)
    temperature: float = 1.0  # sampling: log-probabilities / temperature; < 1 sharper, > 1 flatter
    top_k: int = 0  # sampling: draw among the k most probable tokens; 0 = the whole vocabulary
    top_p: float = 1.0  # sampling: among the fewest most probable tokens holding this probability
    seed: int = 0  # sampling: the same seed, settings and input lines give the same samples
    samples_per_input: int = 1  # sampling: samples of each input, tab-separated, best first

    def validate(self) -> None:
        for name in ("beam_size", "batch_size", "samples_per_input"):
            value = getattr(self, name)
            self.require(value is None or value >= 1, name, "at least 1")
        for name in (
            "alpha",
            "extra_length",
            "slot_extra_length",
            "num_samples",
            "min_length",
            "top_k",
        ):
            value = getattr(self, name)
            self.require(value is None or value >= 0, name, "0 or more")
        self.require(self.stopping in STOPPING_RULES, "stopping", " or ".join(STOPPING_RULES))
        self.require(
            self.length_penalty is None or self.length_penalty in LENGTH_PENALTIES,
            "length_penalty",
            " or ".join(LENGTH_PENALTIES),
        )
        self.require(
            math.isfinite(self.temperature) and self.temperature > 0,
            "temperature",
            "a number more than 0",
        )
        self.require(0 < self.top_p <= 1, "top_p", "more than 0 and at most 1")
        self.require(0 <= self.seed <= MAX_SEED, "seed", f"from 0 to {MAX_SEED}")
        self._validate_sampling()

    def _validate_sampling(self) -> None:
        """Refuses sampling settings without sampling, and beam settings with it."""
        if not self.sampling:
            defaults = {field.name: field.default for field in dataclasses.fields(self)}
            given = [name for name in SAMPLING_SETTINGS if getattr(self, name) != defaults[name]]
            if given:
                name = given[0]
                raise HParamsError(
                    f"hparam {name}={getattr(self, name)} is set but sampling is false: "
                    f"{', '.join(SAMPLING_SETTINGS)} shape sampling only; add sampling=true, "
                    f"or drop {name}."
                )
            return
        contradictions = {
            "beam_size": self.beam_size not in (None, 1),
            "return_beams": self.return_beams,
            "stopping": self.stopping != "first_k",
        }
        for name, contradicts in contradictions.items():
            if contradicts:
                value = str(getattr(self, name)).lower()
                raise HParamsError(
                    f"hparam {name}={value} cannot go with sampling=true: each sample is drawn "
                    f"token by token in a row of its own, without beams; drop {name}, and ask "
                    "for several samples with samples_per_input."
                )

    def resolve(self, defaults: SearchDefaults | HParams) -> DecodeSettings:
        """These settings with every unset search setting decided.

        Args:
          defaults: the model's hparams (`TransformerHParams`), or the
            `SearchDefaults` an export stored: unset beam_size, alpha and
            extra_length take their values.
        """
        given = dataclasses.asdict(self)
        if self.sampling:  # One row per sample, whatever the model's beam.
            given["beam_size"] = 1
        for name, value in dataclasses.asdict(SearchDefaults.of(defaults)).items():
            if given[name] is None:
                given[name] = value
        # Never more than extra_length: then the first pass is the only one.
        extra, slot_extra = given["extra_length"], given["slot_extra_length"]
        given["slot_extra_length"] = extra if slot_extra is None else min(extra, slot_extra)
        return DecodeSettings(
            search=SearchSettings(**{name: given[name] for name in SEARCH_SETTINGS}),
            batch_size=self.batch_size,
            write_beam_scores=self.write_beam_scores,
            num_samples=self.num_samples,
        )

    def check_search_only(self) -> None:
        """Refuses settings of file decoding (batching, writing), which an exported model lacks."""
        others = [name for name in self.changed() if name not in SEARCH_SETTINGS]
        if others:
            raise UserError(
                f"--decode_hparams sets {', '.join(others)}, which an exported model does not "
                f"have; it takes {', '.join(SEARCH_SETTINGS)}."
            )

    def changed(self) -> list[str]:
        """The fields set to other than their defaults."""
        defaults = DecodeHParams()
        return [name for name in self.values() if getattr(self, name) != getattr(defaults, name)]
