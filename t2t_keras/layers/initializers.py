"""Initial weights: tensor2tensor's scheme, or one normal distribution for every matrix.

`stddev` 0 is tensor2tensor's: projections Glorot-uniform over the matrix as a
whole, token embeddings N(0, d_model^-0.5) so they have unit variance after the
sqrt(d_model) scaling. Above 0, projections and token embeddings alike are
drawn from N(0, stddev), as BERT and Marian do (0.02): smaller projections than
Glorot's for widths under about 2,500, and, on small corpora, a faster fall of
the loss per update.
"""

from __future__ import annotations

import keras


def projection(stddev: float, fan_in: int, fan_out: int) -> keras.initializers.Initializer:
    """A [fan_in, fan_out] matrix's initializer (heads folded in: the matrix as a whole)."""
    if stddev > 0:
        return keras.initializers.RandomNormal(stddev=stddev)
    limit = (6.0 / (fan_in + fan_out)) ** 0.5
    return keras.initializers.RandomUniform(-limit, limit)


def embedding(stddev: float, d_model: int) -> keras.initializers.Initializer:
    """A token embedding's initializer."""
    return keras.initializers.RandomNormal(stddev=stddev if stddev > 0 else d_model**-0.5)
