"""Floating-point operations of the Transformer's matrix products, from its hparams alone.

Counted: every matrix multiplication (2 FLOPs per multiply-add), namely the
attention projections W^Q, W^K, W^V, W^O, the attention scores Q K^T and their
weighted sum of V, the feed-forward block, and the pre-softmax projection onto
the target vocabulary. Not counted: embeddings (a lookup), softmax, layer norm,
biases, dropout, the loss, the optimizer update; all are linear in the
tokens and small beside the products.

- Training: 3 x the forward pass (the backward pass costs about twice the
  forward), i.e. the usual 6 x parameters x tokens, plus attention.
- Decoding: the encoder once per sentence, the encoder-decoder keys and values
  once per sentence, then per generated token and per beam 2 x the decoder's
  parameters (projection onto the vocabulary included), plus attention over
  the prefix and the source.
"""

from __future__ import annotations

from t2t_keras.models.transformer_hparams import TransformerHParams


def _attention_projections(hparams: TransformerHParams) -> tuple[int, int]:
    """Multiply-adds per token: (W^Q and W^O on a query, W^K and W^V on a key/value)."""
    heads, d_model = hparams.num_heads, hparams.d_model
    per_query = d_model * heads * hparams.d_k + heads * hparams.d_v * d_model
    per_memory = d_model * heads * (hparams.d_k + hparams.d_v)
    return per_query, per_memory


def _attention_products(hparams: TransformerHParams, keys: int) -> int:
    """Multiply-adds per query for Q K^T and the weighted sum of V over `keys` positions."""
    return keys * hparams.num_heads * (hparams.d_k + hparams.d_v)


def forward_flops(
    hparams: TransformerHParams, batch: int, source_length: int, target_length: int
) -> float:
    """FLOPs of one forward pass over `batch` pairs of the given lengths (teacher forcing)."""
    per_query, per_memory = _attention_projections(hparams)
    feed_forward = 2 * hparams.d_model * hparams.d_ff
    encoder_token = (
        per_query + per_memory + _attention_products(hparams, source_length) + feed_forward
    )
    decoder_token = (
        2 * per_query
        + per_memory
        + _attention_products(hparams, target_length)
        + _attention_products(hparams, source_length)
        + feed_forward
    )
    cross_keys_values = per_memory * source_length  # Per decoder layer and sentence.
    per_sentence = (
        hparams.num_encoder_layers * encoder_token * source_length
        + hparams.num_decoder_layers * (decoder_token * target_length + cross_keys_values)
        + hparams.d_model * hparams.targets_vocab_size() * target_length
    )
    return 2.0 * batch * per_sentence


def train_flops(
    hparams: TransformerHParams, batch: int, source_length: int, target_length: int
) -> float:
    """FLOPs of one training step: forward and backward (3 x forward)."""
    return 3.0 * forward_flops(hparams, batch, source_length, target_length)


def decode_flops(
    hparams: TransformerHParams, batch: int, source_length: int, output_length: int, beams: int
) -> float:
    """FLOPs of decoding `batch` sentences to `output_length` tokens with `beams` hypotheses."""
    per_query, per_memory = _attention_projections(hparams)
    feed_forward = 2 * hparams.d_model * hparams.d_ff
    encoder = (
        hparams.num_encoder_layers
        * source_length
        * (per_query + per_memory + _attention_products(hparams, source_length) + feed_forward)
        + hparams.num_decoder_layers * per_memory * source_length
    )
    generated = 0
    for position in range(1, output_length + 1):
        layer = (
            2 * per_query
            + per_memory
            + _attention_products(hparams, position)
            + _attention_products(hparams, source_length)
            + feed_forward
        )
        generated += (
            hparams.num_decoder_layers * layer + hparams.d_model * hparams.targets_vocab_size()
        )
    return 2.0 * batch * (encoder + beams * generated)
