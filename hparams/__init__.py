"""The catalog of hparams sets, installed as `t2t_keras.hparams`.

Every module is imported here by name; an import error is never swallowed.
"""

from t2t_keras.hparams import transformer

__all__ = ["transformer"]
