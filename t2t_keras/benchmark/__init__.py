"""Speed measurements (t2t-benchmark): FLOP counts, and timed training, decoding and matmuls.

Above training and decoding, whose code it times; `flops` and this package need no
TensorFlow.
"""

from __future__ import annotations

from t2t_keras.models.transformer_hparams import TransformerHParams

# The vocabulary of t2t-benchmark's random ids, and of the benchmarks that copy its shapes.
DEFAULT_VOCAB_SIZE = 8000


def with_vocabulary(hparams: TransformerHParams) -> TransformerHParams:
    """hparams, with DEFAULT_VOCAB_SIZE pieces where they leave vocab_size at 0 (the problem's)."""
    if hparams.vocab_size:
        return hparams
    return hparams.override(f"vocab_size={DEFAULT_VOCAB_SIZE}")
