"""Problems and the data they produce: vocabularies, shards, batches.

`Problem`, `Text2TextProblem` and `ParsingProblem` are loaded on first use, so that a module of
this package that needs no TensorFlow (trees, ids) imports without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from t2t_keras.data.parsing_problem import ParsingProblem
    from t2t_keras.data.problem import Problem
    from t2t_keras.data.text_problem import Text2TextProblem

_MODULES = {
    "Problem": "t2t_keras.data.problem",
    "Text2TextProblem": "t2t_keras.data.text_problem",
    "ParsingProblem": "t2t_keras.data.parsing_problem",
}

__all__ = ["ParsingProblem", "Problem", "Text2TextProblem"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULES[name]), name)
