"""Parameter count of a Transformer, computed from its hparams alone."""

from __future__ import annotations

from t2t_keras.errors import UserError
from t2t_keras.models.transformer_hparams import TransformerHParams


def count_params(
    hparams: TransformerHParams,
    vocab_size: int | None = None,
    target_vocab_size: int | None = None,
) -> int:
    """Trainable parameters of the Transformer that `hparams` describes.

    The model it counts: attention projections W^Q, W^K, W^V, W^O without
    biases (the paper's formula; with attention_bias, the query's and the
    output's), a logits bias with logits_bias; feed-forward blocks with biases; layer norms
    with a scale and an offset; embeddings shared or not as the hparams say; a
    final layer norm per stack when layer norm comes before each sub-layer.

    Args:
      hparams: the model's hparams.
      vocab_size: source vocabulary size; defaults to `hparams.vocab_size`.
      target_vocab_size: target vocabulary size; defaults to
        `hparams.target_vocab_size` without shared embeddings, else (or when
        that is 0) to the source size.

    Returns:
      The number of trainable weights.
    """
    source_vocab = vocab_size or hparams.vocab_size
    # hparams.targets_vocab_size() with vocab_size=source_vocab: a shared matrix has one size.
    own_target = 0 if hparams.shared_embeddings else hparams.target_vocab_size
    target_vocab = target_vocab_size or own_target or source_vocab
    if source_vocab < 1:
        raise UserError(
            "count_params needs a vocabulary size: pass vocab_size or set "
            "hparams.vocab_size to a positive number."
        )
    d_model = hparams.d_model
    attention = d_model * hparams.num_heads * (2 * hparams.d_k + 2 * hparams.d_v)
    if hparams.attention_bias:  # The query's and the output's.
        attention += hparams.num_heads * hparams.d_k + d_model
    feed_forward = 2 * d_model * hparams.d_ff + hparams.d_ff + d_model
    layer_norm = 2 * d_model
    encoder_layer = attention + feed_forward + 2 * layer_norm
    decoder_layer = 2 * attention + feed_forward + 3 * layer_norm
    total = (
        hparams.num_encoder_layers * encoder_layer
        + hparams.num_decoder_layers * decoder_layer
        + _embedding_params(hparams, source_vocab, target_vocab)
    )
    if hparams.layer_norm_position == "pre":
        total += 2 * layer_norm
    if hparams.position_encoding == "learned":
        total += 2 * hparams.max_length * d_model
    if hparams.reads_leaves():  # The table of word starts (not trained).
        total += source_vocab
    total += (hparams.leaf_positions + hparams.leaf_words) * d_model * d_model  # Projections.
    if hparams.logits_bias:
        total += target_vocab
    return total


def _embedding_params(hparams: TransformerHParams, source_vocab: int, target_vocab: int) -> int:
    if hparams.shared_embeddings:
        if source_vocab != target_vocab:
            raise UserError(
                f"shared_embeddings=true needs one vocabulary for inputs and targets, "
                f"got {source_vocab} and {target_vocab} tokens; set "
                "shared_embeddings=false for separate vocabularies."
            )
        return source_vocab * hparams.d_model
    softmax = 0 if hparams.tie_target_embeddings else target_vocab
    return (source_vocab + target_vocab + softmax) * hparams.d_model
