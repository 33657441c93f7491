"""The search: greedy and beam search over the cached Transformer decoder, its
rules (allowed tokens, length penalties, stopping), the parse-tree constraint,
the decoding settings, and `Decoder`, the compiled search over a model.

The names below are loaded on first use, so that importing a module of this
package (settings, for the binaries' --help) needs no TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from t2t_keras.search.beam import BeamState, beam_search
    from t2t_keras.search.decoder import Decoder, decode_limits
    from t2t_keras.search.greedy import greedy_search
    from t2t_keras.search.rules import length_penalty
    from t2t_keras.search.settings import (
        DecodeHParams,
        DecodeSettings,
        SearchDefaults,
        SearchSettings,
    )

_MODULES = {
    "BeamState": "t2t_keras.search.beam",
    "beam_search": "t2t_keras.search.beam",
    "Decoder": "t2t_keras.search.decoder",
    "decode_limits": "t2t_keras.search.decoder",
    "greedy_search": "t2t_keras.search.greedy",
    "length_penalty": "t2t_keras.search.rules",
    "DecodeHParams": "t2t_keras.search.settings",
    "DecodeSettings": "t2t_keras.search.settings",
    "SearchDefaults": "t2t_keras.search.settings",
    "SearchSettings": "t2t_keras.search.settings",
}

__all__ = [
    "BeamState",
    "DecodeHParams",
    "DecodeSettings",
    "Decoder",
    "SearchDefaults",
    "SearchSettings",
    "beam_search",
    "decode_limits",
    "greedy_search",
    "length_penalty",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name]), name)
