"""Decoding settings: `--decode_hparams="beam_size=4,alpha=0.6,..."`, and their resolution.

`DecodeHParams` is what a user writes: unset search settings are None and take
the values of the hparams set the model was trained with (the paper's beam 4,
alpha 0.6 and input length + 50 for translation; beam 21, alpha 0.3 and + 300
for parsing). `DecodeHParams.resolve` is the one place they are filled in: it
returns `DecodeSettings`, every value decided, which the binaries build once
and everything below them (`Decoder`, the translators, the exports, the
trainer's evaluation, the benchmark) takes as it is.

This module imports no TensorFlow: the binaries' --help lists these fields.
"""

from __future__ import annotations

import dataclasses

from t2t_keras.errors import UserError
from t2t_keras.hparam import HParams

# The beam search's stopping rules (see `beam.beam_search`); defined here, where
# no TensorFlow is needed to check a --decode_hparams.
STOPPING_RULES = ("first_k", "best_possible")
# How alpha normalizes a hypothesis's log-probability by its length n (EOS
# counted): "gnmt" divides by ((5 + n) / 6) ** alpha (GNMT's, tensor2tensor's),
# "length" by n ** alpha (CTranslate2's and fairseq's).
LENGTH_PENALTIES = ("gnmt", "length")
# The search settings that come from the model's hparams set when unset.
_FROM_MODEL = ("beam_size", "alpha", "extra_length")


@dataclasses.dataclass(frozen=True)
class SearchDefaults:
    """What unset search settings take: the hparams set's beam_size, alpha and extra_length.

    A model's TransformerHParams holds them; a CTranslate2 export stores them.
    """

    beam_size: int
    alpha: float
    extra_length: int

    @classmethod
    def of(cls, model_hparams: SearchDefaults | SearchSettings | HParams) -> SearchDefaults:
        """The defaults a model's hparams (or an export's stored ones) give; read only here."""
        return cls(*(getattr(model_hparams, name) for name in _FROM_MODEL))


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The search's settings, every one decided (`DecodeHParams` documents each)."""

    beam_size: int
    alpha: float
    length_penalty: str
    extra_length: int
    return_beams: bool
    min_length: int
    stopping: str
    tree_constraint: bool

    @property
    def num_returned(self) -> int:
        """Hypotheses returned per sentence: beam_size with return_beams, else 1."""
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
    length_penalty: str = "gnmt"  # score / ((5 + n) / 6) ** alpha ("gnmt") or n ** alpha ("length")
    extra_length: int | None = None  # output may exceed input by this many tokens; None = set's
    min_length: int = 1  # fewest output tokens for a non-empty input; 0 lets EOS come first
    stopping: str = "first_k"  # beam stops at K finished ("first_k") or when none can win
    tree_constraint: bool = True  # parsing: only well-formed trees over the input's words
    batch_size: int = 64  # sentences searched at once: our search's slots, a CTranslate2 batch
    return_beams: bool = False  # write every beam, tab-separated, best first
    write_beam_scores: bool = False  # append the score(s) after the output, tab-separated
    num_samples: int = 0  # decode only the split's first N examples; 0 = all of them

    def validate(self) -> None:
        for name in ("beam_size", "batch_size"):
            value = getattr(self, name)
            self.require(value is None or value >= 1, name, "at least 1")
        for name in ("alpha", "extra_length", "num_samples", "min_length"):
            value = getattr(self, name)
            self.require(value is None or value >= 0, name, "0 or more")
        self.require(self.stopping in STOPPING_RULES, "stopping", " or ".join(STOPPING_RULES))
        self.require(
            self.length_penalty in LENGTH_PENALTIES,
            "length_penalty",
            " or ".join(LENGTH_PENALTIES),
        )

    def resolve(self, defaults: SearchDefaults | HParams) -> DecodeSettings:
        """These settings with every unset search setting decided.

        Args:
          defaults: the model's hparams (`TransformerHParams`), or the
            `SearchDefaults` an export stored: unset beam_size, alpha and
            extra_length take their values.
        """
        given = dataclasses.asdict(self)
        for name, value in dataclasses.asdict(SearchDefaults.of(defaults)).items():
            if given[name] is None:
                given[name] = value
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
