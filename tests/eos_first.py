"""Turning a built Transformer into one that puts EOS first at every position.

Importable from every test module (pyproject.toml puts tests/ on the path).
"""

from __future__ import annotations

import numpy as np

from t2t_keras.data.ids import EOS_ID


def make_eos_first(model) -> None:
    """Every decoder output becomes one fixed vector v, and EOS's embedding 4 v.

    The layer norm that feeds the softmax (the decoder's final norm when
    pre-norm, the last decoder layer's last residual norm when post-norm) gets
    gamma 0 and beta v, so the logits are the same at every position, EOS's
    (4 |v|^2) far above every other token's. The second best token is fixed too.
    """
    if model.final_norms:
        norm = model.final_norms[1]
    else:
        norm = model.decoder_layers[-1].feed_forward_block.norm
    d_model = model.hparams.d_model
    direction = np.random.default_rng(0).standard_normal(d_model).astype(np.float32)
    norm.gamma.assign(np.zeros(d_model, np.float32))
    norm.beta.assign(direction)
    embeddings = model.softmax_weights.embeddings
    table = np.array(embeddings.numpy())
    table[EOS_ID] = 4.0 * direction
    embeddings.assign(table)
