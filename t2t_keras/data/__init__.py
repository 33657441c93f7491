"""Problems and the data they produce."""

from t2t_keras.data.problem import Problem

__all__ = ["Problem"]
