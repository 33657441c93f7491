"""Problems and the data they produce: vocabularies, shards, batches."""

from t2t_keras.data.problem import Problem
from t2t_keras.data.text_problem import Text2TextProblem

__all__ = ["Problem", "Text2TextProblem"]
