"""Models: the Transformer, its hparams and its parameter count."""

from t2t_keras.models.param_count import count_params
from t2t_keras.models.transformer_hparams import TransformerHParams

__all__ = ["TransformerHParams", "count_params"]
