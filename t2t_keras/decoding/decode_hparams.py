"""Decoding settings: `--decode_hparams="beam_size=4,alpha=0.6,..."`.

Unset search settings take the values of the hparams set the model was
trained with: the paper's beam 4, alpha 0.6 and input length + 50 for
translation; beam 21, alpha 0.3 and + 300 for parsing. `resolved` is the one
place they are filled in; t2t-decoder and t2t-exporter resolve once and
pass the result down, and Translator and export_translator resolve again,
which changes nothing then.

This module imports no TensorFlow: the binaries' --help lists these fields.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from t2t_keras.hparam import HParams

if TYPE_CHECKING:
    from t2t_keras.models.transformer_hparams import TransformerHParams

# The settings of the search itself (Decoder's keyword arguments); the rest
# are t2t-decoder's batching and writing.
SEARCH_SETTINGS = (
    "beam_size",
    "alpha",
    "length_penalty",
    "extra_length",
    "return_beams",
    "min_length",
    "stopping",
    "tree_constraint",
)
# The beam search's stopping rules (see `search.beam_search`); defined here, where
# no TensorFlow is needed to check a --decode_hparams.
STOPPING_RULES = ("first_k", "best_possible")
# How alpha normalizes a hypothesis's log-probability by its length n (EOS
# counted): "gnmt" divides by ((5 + n) / 6) ** alpha (GNMT's, tensor2tensor's),
# "length" by n ** alpha (CTranslate2's and fairseq's).
LENGTH_PENALTIES = ("gnmt", "length")
# The search settings that come from the model's hparams when unset.
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
    def of(cls, model_hparams: SearchDefaults | TransformerHParams) -> SearchDefaults:
        return cls(*(getattr(model_hparams, name) for name in _FROM_MODEL))


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
    batch_size: int = 32  # sentences decoded together (file decoding sorts them by length)
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

    def resolved(self, model_hparams: SearchDefaults | TransformerHParams) -> DecodeHParams:
        """A copy whose unset search settings are the model hparams' values.

        Resolving a resolved copy returns it unchanged.
        """
        defaults = dataclasses.asdict(SearchDefaults.of(model_hparams))
        return dataclasses.replace(
            self, **{name: value for name, value in defaults.items() if getattr(self, name) is None}
        )

    def beam_alpha_extra_length(self) -> tuple[int, float, int]:
        """beam_size, alpha and extra_length of resolved settings (see `resolved`)."""
        if self.beam_size is None or self.alpha is None or self.extra_length is None:
            raise ValueError(f"{self} is not resolved: call resolved(model_hparams) first.")
        return self.beam_size, self.alpha, self.extra_length

    def search_settings(self) -> dict[str, Any]:
        """The search's settings, as `Decoder`'s keyword arguments."""
        return {name: getattr(self, name) for name in SEARCH_SETTINGS}

    def changed(self) -> list[str]:
        """The fields set to other than their defaults."""
        defaults = DecodeHParams()
        return [name for name in self.values() if getattr(self, name) != getattr(defaults, name)]
