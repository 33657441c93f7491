"""The catalog of problems, installed as `t2t_keras.problems`.

Every module is imported here by name; an import error is never swallowed.
"""

from t2t_keras.problems import (
    algorithmic,
    number_words,
    parsing_synthetic,
    parsing_wsj,
    text2text,
    translate_wmt,
)

__all__ = [
    "algorithmic",
    "number_words",
    "parsing_synthetic",
    "parsing_wsj",
    "text2text",
    "translate_wmt",
]
