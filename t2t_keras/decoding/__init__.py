"""Decoding: greedy and beam search over the cached Transformer decoder.

The names below are loaded on first use, so that importing a module of this
package (decode_hparams, for the binaries' --help) needs no TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from t2t_keras.decoding.decoder import Decoder, decode_limits
    from t2t_keras.decoding.search import beam_search, greedy_search, length_penalty

_MODULES = {
    "Decoder": "t2t_keras.decoding.decoder",
    "decode_limits": "t2t_keras.decoding.decoder",
    "beam_search": "t2t_keras.decoding.search",
    "greedy_search": "t2t_keras.decoding.search",
    "length_penalty": "t2t_keras.decoding.search",
}

__all__ = ["Decoder", "beam_search", "decode_limits", "greedy_search", "length_penalty"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name]), name)
