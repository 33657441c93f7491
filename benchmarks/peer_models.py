"""The peers' models: Hugging Face Marian built with an hparams set's shape, and CTranslate2's.

Marian is post-norm with no final or embedding layer norm and sinusoid
positions whatever its config says; the rest is set here from the hparams:
sizes, dropout, ReLU, one embedding matrix for the encoder, the decoder and
the softmax, scaled by sqrt(d_model), and N(0, initializer_stddev) weights
(with 0, tensor2tensor's scheme, Marian keeps its own N(0, 0.02)).
`check_marian_can_copy` refuses a set Marian cannot copy.

Needs the optional peers: a CPU build of torch (`pip install torch==2.13.0`),
then `pip install -e '.[peers]'`. No TensorFlow.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
import transformers
from ctranslate2.converters import TransformersConverter
from transformers import MarianConfig, MarianMTModel

from t2t_keras.models.transformer_hparams import TransformerHParams

MARIAN_VERSION = f"transformers {transformers.__version__}, torch {torch.__version__}"
# Marian's config fields that copy one of our hparams.
FROM_HPARAMS = {
    "d_model": "d_model",
    "encoder_layers": "num_encoder_layers",
    "decoder_layers": "num_decoder_layers",
    "encoder_attention_heads": "num_heads",
    "decoder_attention_heads": "num_heads",
    "encoder_ffn_dim": "d_ff",
    "decoder_ffn_dim": "d_ff",
    "dropout": "dropout",
    "attention_dropout": "attention_dropout",
    "activation_dropout": "relu_dropout",
    "max_position_embeddings": "max_length",
}


def check_marian_can_copy(hparams: TransformerHParams) -> None:
    """Raises ValueError, saying why, if Marian cannot have the set's architecture."""
    head_size = hparams.d_model // hparams.num_heads
    required = {
        "layer_norm_position": ("post", "Marian is post-norm"),
        "position_encoding": ("sinusoid", "Marian's positions are sinusoids"),
        "shared_embeddings": (True, "the peers share one embedding matrix"),
        "optimizer": ("adam", "the peers train with Adam"),
        "d_k": (head_size, "Marian's heads are d_model / num_heads"),
        "d_v": (head_size, "Marian's heads are d_model / num_heads"),
    }
    for name, (wanted, reason) in required.items():
        if getattr(hparams, name) != wanted:
            raise ValueError(f"{name}={getattr(hparams, name)}: {reason}; need {wanted}.")


def marian_model(
    hparams: TransformerHParams, vocab_size: int, pad_id: int, eos_id: int, forced_eos: bool
) -> MarianMTModel:
    """The set's shape as a Marian model, weights from torch's current seed.

    Args:
      hparams: the sizes, dropout and initializer copied.
      vocab_size: rows of the one embedding matrix.
      pad_id: PAD, also the decoder's start symbol (a zero embedding).
      eos_id: EOS.
      forced_eos: whether generation writes EOS at the length limit.
    """
    config = MarianConfig(
        **{theirs: getattr(hparams, ours) for theirs, ours in FROM_HPARAMS.items()},
        vocab_size=vocab_size,
        activation_function="relu",
        scale_embedding=True,
        init_std=hparams.initializer_stddev or 0.02,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        forced_eos_token_id=eos_id if forced_eos else None,
        decoder_start_token_id=pad_id,
    )
    model = MarianMTModel(config)
    shared = model.get_input_embeddings().weight
    for weight in (model.get_output_embeddings().weight, model.model.decoder.embed_tokens.weight):
        if weight.data_ptr() != shared.data_ptr():
            raise RuntimeError("Marian's embeddings are not shared as configured.")
    return model


def set_threads(threads: int) -> None:
    """torch's intra-op and inter-op threads."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)


def teacher_forced_logits(
    model: MarianMTModel, sources: torch.Tensor, labels: torch.Tensor, pad_id: int
) -> torch.Tensor:
    """Logits [B, T, V] for labels [B, T] given sources [B, S]: labels shifted right behind PAD."""
    decoder_inputs = torch.nn.functional.pad(labels[:, :-1], (1, 0), value=pad_id)
    return model(
        input_ids=sources, attention_mask=sources.ne(pad_id), decoder_input_ids=decoder_inputs
    ).logits


class _Tokenizer:
    """What CTranslate2's Marian converter reads of a tokenizer (no SentencePiece files)."""

    eos_token, unk_token = "</s>", "<unk>"

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)

    def get_vocab(self) -> dict[str, int]:
        return {token: index for index, token in enumerate(self.tokens)}


class _Converter(TransformersConverter):
    def __init__(self, model_dir: str, tokens: Sequence[str]) -> None:
        super().__init__(model_dir)
        self._tokens = tokens

    def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
        return _Tokenizer(self._tokens)


def convert_to_ctranslate2(model: MarianMTModel, tokens: Sequence[str], work_dir: str) -> str:
    """The Marian model saved, then converted; returns the CTranslate2 model's folder.

    `tokens` are the strings of the ids, in Marian's order (EOS 0, UNK 1, PAD
    last); the converter drops PAD, as for every Marian model.
    """
    model_dir, output_dir = os.path.join(work_dir, "marian"), os.path.join(work_dir, "ct2")
    model.save_pretrained(model_dir)
    return _Converter(model_dir, tokens).convert(output_dir)
