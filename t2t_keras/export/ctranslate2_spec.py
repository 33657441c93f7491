"""A CTranslate2 model specification built from a trained Transformer's weights.

CTranslate2's `TransformerSpec` describes the same network as ours: scaled
embeddings plus a position table, post- or pre-norm layers of multi-head
attention and a feed-forward block (ReLU, swish or GELU), a linear
pre-softmax projection with its bias (our logits bias, or zeros).
This module fills one from our Keras weights, so `ctranslate2.Translator`
computes what `Transformer` computes:

  - embeddings: ours are multiplied by sqrt(d_model), as CTranslate2's
    (`scale_embeddings`); shared or separate matrices are written as they are.
  - positions: the sinusoid table itself is written, `position_table_length`
    rows long, in the model's layout and from its first position (CTranslate2's
    built-in one is the halves layout from 0, ours interleaved by default);
    learned tables as they are.
  - attention: our kernels [D, H, K] become CTranslate2's [H * K, D] linear
    weights (self-attention: queries, keys and values stacked; encoder-decoder
    attention: queries, then keys and values stacked), with our query and
    output biases (attention_bias) and zeros for the keys and values, or zeros
    throughout. Queries are scaled by 1 / sqrt(K) after their bias in both.
  - the ids: 0 = PAD is also the decoder's start symbol, 1 = EOS.

What CTranslate2 cannot express is refused with `UnsupportedModel`: value
depth other than key depth (its heads have one depth).
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import numpy as np

from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.layers.position import sinusoid
from t2t_keras.models.transformer import Transformer

# Reserved pieces of every vocabulary (`Vocabulary.pieces`): PAD, EOS, UNK.
PAD_PIECE, EOS_PIECE, UNK_PIECE = "<pad>", "</s>", "<unk>"
# Our feed-forward activations as CTranslate2 names them (GELU: the exact, erf form).
_ACTIVATIONS = {"relu": "RELU", "swish": "SWISH", "gelu": "GELU"}


class UnsupportedModel(UserError):
    """A model with a feature CTranslate2 has no equivalent of."""


def check_supported(model: Transformer) -> None:
    """Refuses, in one paragraph naming the feature, what CTranslate2 cannot run."""
    hparams = model.hparams
    if hparams.reads_leaves():
        raise UnsupportedModel(
            "this model adds the position or the encoding of the next word to each decoder "
            "input (leaf_positions=true or leaf_words=true, a parser's), which CTranslate2's decoder has no place for, "
            "so it cannot be exported to CTranslate2; decode it with t2t-decoder's default "
            "runtime or export it as a SavedModel."
        )
    if hparams.d_k != hparams.d_v:
        raise UnsupportedModel(
            f"this model has key depth d_k={hparams.d_k} and value depth d_v={hparams.d_v} "
            "per head, and CTranslate2's attention has one depth for both, so it cannot be "
            "exported to CTranslate2. Models with d_k == d_v (every paper set but Table 3's "
            "B variants that change one of them) export; decode this one with "
            "t2t-decoder's default runtime or export it as a SavedModel."
        )


def model_spec(
    model: Transformer,
    vocabs: dict[str, Vocabulary],
    position_table_length: int,
) -> Any:
    """A `ctranslate2.specs.TransformerSpec` holding the model's weights and vocabularies.

    Args:
      model: a built Transformer with its trained weights.
      vocabs: {"inputs", "targets"} vocabularies; each is written as its side's
        embedding rows (vocab_size, targets_vocab_size()), ids beyond its own size
        as "<id N>".
      position_table_length: rows of each position table written for a
        sinusoid model (learned tables keep their max_length rows); the
        longest sequence the exported model can read or write.

    Raises:
      UnsupportedModel: see `check_supported`.
    """
    import ctranslate2  # The optional extra: its absence is reported by the caller.

    check_supported(model)
    hparams = model.hparams
    head_dim = hparams.d_k if hparams.d_k * hparams.num_heads != hparams.d_model else None
    pre_norm = hparams.layer_norm_position == "pre"
    specs = ctranslate2.specs
    layer_args = {
        "pre_norm": pre_norm,
        "head_dim": head_dim,
        "activation": getattr(specs.Activation, _ACTIVATIONS[hparams.ffn_activation]),
    }
    encoder = specs.TransformerEncoderSpec(
        hparams.num_encoder_layers, hparams.num_heads, **layer_args
    )
    decoder = specs.TransformerDecoderSpec(
        hparams.num_decoder_layers, hparams.num_heads, **layer_args
    )
    spec = specs.TransformerSpec(encoder, decoder)
    tables = _position_tables(model, position_table_length)
    _fill_encoder(spec.encoder, model, tables[0])
    _fill_decoder(spec.decoder, model, tables[1])
    spec.config.add_source_eos = False  # Our rows end with EOS already; see ctranslate2_runtime.
    spec.config.unk_token = UNK_PIECE
    spec.config.eos_token = EOS_PIECE
    spec.config.bos_token = PAD_PIECE  # No BOS: the decoder starts from PAD.
    spec.config.decoder_start_token = PAD_PIECE
    spec.decoder.start_from_zero_embedding = hparams.decoder_start == "zero"
    spec.config.layer_norm_epsilon = hparams.layer_norm_epsilon
    for side, register, size in (
        ("inputs", spec.register_source_vocabulary, hparams.vocab_size),
        ("targets", spec.register_target_vocabulary, hparams.targets_vocab_size()),
    ):
        register(vocabulary_pieces(vocabs[side], size))
    return spec


def vocabulary_pieces(vocab: Vocabulary, size: int) -> list[str]:
    """The `size` pieces CTranslate2 maps ids to: the vocabulary's, then "<id N>" fillers.

    Raises:
      UnsupportedModel: two ids with one piece (CTranslate2 maps tokens by name).
    """
    pieces = vocab.pieces(range(size))
    twice = [piece for piece, count in collections.Counter(pieces).items() if count > 1]
    if twice:
        raise UnsupportedModel(
            f"the vocabulary has the piece {twice[0]!r} at two ids, and CTranslate2 looks tokens "
            "up by their text, so it cannot be exported; retrain the vocabulary with "
            "t2t-datagen (SentencePiece pieces are unique)."
        )
    return pieces


def _position_tables(model: Transformer, length: int) -> tuple[np.ndarray, np.ndarray]:
    """The encoder's and decoder's [N, D] position tables."""
    if model.position_tables:
        encoder, decoder = (_array(table.table) for table in model.position_tables)
        return encoder, decoder
    hparams = model.hparams
    positions = np.arange(length) + hparams.position_start
    table = sinusoid(positions, hparams.d_model, hparams.position_layout).numpy()
    return table, table


def _fill_encoder(spec: Any, model: Transformer, positions: np.ndarray) -> None:
    spec.embeddings[0].weight = _array(model.source_embedding.embeddings)
    spec.position_encodings.encodings = positions
    for layer_spec, layer in zip(spec.layer, model.encoder_layers, strict=True):
        _fill_self_attention(layer_spec.self_attention, layer)
        _fill_feed_forward(layer_spec.ffn, layer)
    if model.final_norms:
        _fill_norm(spec.layer_norm, model.final_norms[0])


def _fill_decoder(spec: Any, model: Transformer, positions: np.ndarray) -> None:
    spec.embeddings.weight = _array(model.target_embedding.embeddings)
    spec.position_encodings.encodings = positions
    projection = _array(model.softmax_weights.embeddings)  # [V, D]: logits = x W^T.
    bias = model.logits_bias if model.logits_bias is not None else np.zeros(len(projection))
    _fill_linear(spec.projection, projection, _array(bias))
    for layer_spec, layer in zip(spec.layer, model.decoder_layers, strict=True):
        _fill_self_attention(layer_spec.self_attention, layer)
        attention = layer.memory_attention
        _fill_norm(layer_spec.attention.layer_norm, layer.memory_block.norm)
        _fill_projections(
            layer_spec.attention.linear,
            [[attention.query_kernel], [attention.key_kernel, attention.value_kernel]],
            attention,
        )
        _fill_feed_forward(layer_spec.ffn, layer)
    if model.final_norms:
        _fill_norm(spec.layer_norm, model.final_norms[1])


def _fill_self_attention(spec: Any, layer: Any) -> None:
    attention = layer.self_attention
    _fill_norm(spec.layer_norm, layer.attention_block.norm)
    kernels = [attention.query_kernel, attention.key_kernel, attention.value_kernel]
    _fill_projections(spec.linear, [kernels], attention)


def _fill_projections(
    linears: Sequence[Any], stacked_inputs: list[list[Any]], attention: Any
) -> None:
    """Input projections [D, H, K] -> [H * K, D] (each group stacked), output [H, V, D] -> [D, H * V];
    the biases: the query's first in its group, zeros for keys and values."""
    for linear, kernels in zip(linears, stacked_inputs, strict=False):
        weight = np.concatenate([_heads_kernel(kernel) for kernel in kernels], axis=0)
        bias = np.zeros(weight.shape[0], np.float32)
        if attention.query_bias is not None and kernels[0] is attention.query_kernel:
            query_bias = _array(attention.query_bias).reshape(-1)
            bias[: len(query_bias)] = query_bias
        _fill_linear(linear, weight, bias)
    output = _array(attention.output_kernel)
    output = output.reshape(-1, output.shape[-1]).T  # [D, H * V]
    output_bias = attention.output_bias
    if output_bias is None:
        output_bias = np.zeros(output.shape[0], np.float32)
    _fill_linear(linears[-1], output, _array(output_bias))


def _heads_kernel(kernel: Any) -> np.ndarray:
    """Our [D, H, K] projection as CTranslate2's [H * K, D] (output rows, input columns)."""
    array = _array(kernel)
    return array.reshape(array.shape[0], -1).T


def _fill_feed_forward(spec: Any, layer: Any) -> None:
    _fill_norm(spec.layer_norm, layer.feed_forward_block.norm)
    for linear, dense in zip(
        (spec.linear_0, spec.linear_1),
        (layer.feed_forward.inner, layer.feed_forward.outer),
        strict=True,
    ):
        _fill_linear(linear, _array(dense.kernel).T, _array(dense.bias))


def _fill_norm(spec: Any, norm: Any) -> None:
    spec.gamma = _array(norm.gamma)
    spec.beta = _array(norm.beta)


def _fill_linear(spec: Any, weight: np.ndarray, bias: np.ndarray) -> None:
    spec.weight = np.ascontiguousarray(weight, np.float32)
    spec.bias = np.ascontiguousarray(bias, np.float32)


def _array(variable: Any) -> np.ndarray:
    return np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable, np.float32)
