"""A Hugging Face Marian model (OPUS-MT) as our Transformer: hparams, weights, ids.

A Marian model is the paper's Transformer with post-norm layers (layer norm
epsilon 1e-5), embeddings scaled by sqrt(d_model) and tied, and five
differences, each an hparams option here: the feed-forward activation
(swish in OPUS-MT), biases on every attention projection (the query's and
the output's kept; the key's cancels in the softmax and the value's is
folded into the output's), `final_logits_bias`, sinusoids laid out as every
sine then every cosine, and its ids: `</s>` 0, `<unk>` 1, ..., `<pad>` V-1,
where ours are PAD 0, EOS 1, UNK 2. Ours = (Marian's + 1) mod V: every row
moves down one and the last comes first; the decoder starts from the pad
row in both. Its decoding defaults (beam, length penalty divided by
length ** alpha) come with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import numpy as np

from t2t_keras.importing.sentencepiece_ids import UnsupportedModel, emitted_pieces, rewrite
from t2t_keras.models.transformer_hparams import TransformerHParams

# The files a Marian directory must hold (besides its weights).
REQUIRED_FILES = ("config.json", "source.spm", "target.spm", "vocab.json")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# Config keys of models Marian's code shares, which must be off here.
_MUST_BE_OFF = ("normalize_before", "add_final_layer_norm", "normalize_embedding",
                "layernorm_embedding", "add_bias_logits")  # fmt: skip
_ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}


@dataclasses.dataclass
class MarianModel:
    """What an OPUS-MT directory holds, read."""

    directory: str
    config: dict[str, Any]
    generation: dict[str, Any]
    weights: dict[str, np.ndarray]
    vocab: dict[str, int]  # Piece -> Marian id, the source's (and the target's if joint).
    target_vocab: dict[str, int] | None  # target_vocab.json, when the sides have their own.

    def side_vocab(self, side: str) -> dict[str, int]:
        return self.target_vocab if side == "targets" and self.target_vocab else self.vocab


def read_marian(directory: str) -> MarianModel:
    """Reads an OPUS-MT directory as `huggingface-cli download` leaves it.

    Raises:
      UserError: a missing file, or one that cannot be read.
    """
    missing = [name for name in REQUIRED_FILES if not os.path.isfile(os.path.join(directory, name))]
    weights = [name for name in WEIGHT_FILES if os.path.isfile(os.path.join(directory, name))]
    if missing or not weights:
        absent = missing + ([] if weights else [" or ".join(WEIGHT_FILES)])
        raise UnsupportedModel(
            f"--model_dir={directory} lacks {', '.join(absent)}: a Marian model directory, as "
            "`huggingface-cli download Helsinki-NLP/opus-mt-en-de` leaves it, holds "
            f"{', '.join(REQUIRED_FILES)} and {' or '.join(WEIGHT_FILES)}."
        )
    from t2t_keras.importing.weights_file import read_weights

    config = _read_json(directory, "config.json")
    generation = {}
    if os.path.isfile(os.path.join(directory, "generation_config.json")):
        generation = _read_json(directory, "generation_config.json")
    target_vocab = None
    if os.path.isfile(os.path.join(directory, "target_vocab.json")):
        target_vocab = _read_json(directory, "target_vocab.json")
    return MarianModel(
        directory,
        config,
        generation,
        read_weights(os.path.join(directory, weights[0])),
        _read_json(directory, "vocab.json"),
        target_vocab,
    )


def _read_json(directory: str, name: str) -> dict[str, Any]:
    path = os.path.join(directory, name)
    try:
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnsupportedModel(f"{path} cannot be read as JSON ({error}).") from None
    if not isinstance(value, dict):
        raise UnsupportedModel(f"{path} holds no JSON object, as a Marian model's does.")
    return value


def marian_hparams(marian: MarianModel, decoder_start: str = "pad") -> TransformerHParams:
    """Our hparams for the model `marian.config` describes, its decoding defaults included.

    decoder_start: "pad" to start the decoder as Hugging Face's generate does, from the
    pad row's embedding, or "zero" as CTranslate2's converter does, from none (the same
    where the pad row is zero, as in OPUS-MT's conversions).

    Raises:
      UnsupportedModel: a config key we cannot represent, named with the reason.
    """
    config = marian.config
    _check_config(config)
    heads, d_model = config["encoder_attention_heads"], config["d_model"]
    shared = _shared(config)
    generation = {**config, **marian.generation}
    return TransformerHParams(
        vocab_size=config["vocab_size"],
        target_vocab_size=0 if shared else _sizes(config)["targets"],
        num_encoder_layers=config["encoder_layers"],
        num_decoder_layers=config["decoder_layers"],
        d_model=d_model,
        d_ff=config["encoder_ffn_dim"],
        num_heads=heads,
        d_k=d_model // heads,
        d_v=d_model // heads,
        layer_norm_epsilon=1e-5,
        shared_embeddings=shared,
        tie_target_embeddings=bool(config.get("tie_word_embeddings", True)),
        max_length=_max_length(config, generation),
        initializer_stddev=config.get("init_std", 0.02),
        dropout=config.get("dropout", 0.1),
        embedding_dropout=config.get("dropout", 0.1),
        attention_dropout=config.get("attention_dropout", 0.0),
        relu_dropout=config.get("activation_dropout", 0.0),
        ffn_activation=_ACTIVATIONS[config.get("activation_function", "swish")],  # type: ignore[arg-type]
        attention_bias=True,
        logits_bias=True,
        position_layout="halves",
        position_start=0,
        decoder_start=decoder_start,
        # No limit relative to the input, as Hugging Face's generate: max_length alone.
        extra_length=_max_length(config, generation),
        slot_extra_length=50,
        beam_size=generation.get("num_beams") or 4,
        alpha=float(generation.get("length_penalty", 1.0)),
        length_penalty="length",
    )


def _max_length(config: dict[str, Any], generation: dict[str, Any]) -> int:
    """Our max_length: the positions Marian has, and one less than generate's max_length,
    which counts the decoder's start (ours: EOS is forced at position max_length - 1)."""
    positions = config.get("max_position_embeddings", 512)
    return min(positions, (generation.get("max_length") or positions + 1) - 1)


def _check_config(config: dict[str, Any]) -> None:
    """Refuses a config whose model our Transformer cannot compute exactly."""

    def refuse(key: str, why: str) -> UnsupportedModel:
        return UnsupportedModel(
            f"config.json has {key}={config.get(key)!r}: {why}, so this model cannot be imported. "
            "t2t-importer --from=marian takes Marian models as OPUS-MT publishes them: "
            "post-norm, scaled embeddings, sinusoid positions, relu, swish or gelu."
        )

    if config.get("model_type") != "marian":
        raise refuse("model_type", "--from=marian reads Marian models only")
    for key in _MUST_BE_OFF:
        if config.get(key):
            raise refuse(key, "our Transformer has no such layer norm or bias")
    if config.get("activation_function", "swish") not in _ACTIVATIONS:
        raise refuse("activation_function", f"our feed-forward takes {', '.join(_ACTIVATIONS)}")
    if not config.get("scale_embedding", False):
        raise refuse("scale_embedding", "our embeddings are always scaled by sqrt(d_model)")
    for ours, theirs in (("encoder_attention_heads", "decoder_attention_heads"),
                         ("encoder_ffn_dim", "decoder_ffn_dim")):  # fmt: skip
        if config.get(ours) != config.get(theirs):
            raise refuse(theirs, f"it differs from {ours}, and our stacks share one")
    if config["d_model"] % config["encoder_attention_heads"]:
        raise refuse("encoder_attention_heads", "it does not divide d_model")
    pad = config.get("pad_token_id")
    if config.get("decoder_start_token_id", pad) != pad:
        raise refuse("decoder_start_token_id", f"the decoder must start from <pad> ({pad})")


def our_pieces(marian: MarianModel, side: str, size: int) -> list[str]:
    """Each of our ids' piece: Marian's id (ours - 1) mod size.

    Raises:
      UnsupportedModel: the vocabulary is not `size` ids with </s> 0, <unk> 1,
        <pad> last, as the weights need.
    """
    vocab = marian.side_vocab(side)
    name = "target_vocab.json" if vocab is marian.target_vocab else "vocab.json"
    by_id = {index: piece for piece, index in vocab.items()}
    expected = {0: "</s>", 1: "<unk>", size - 1: "<pad>"}
    wrong = [
        f"{piece} at {index}" for index, piece in expected.items() if by_id.get(index) != piece
    ]
    if len(vocab) != size or sorted(by_id) != list(range(size)) or wrong:
        raise UnsupportedModel(
            f"{name} in {marian.directory} has {len(vocab)} pieces, but the weights have {size} "
            f"rows{' and it lacks ' + ', '.join(wrong) if wrong else ''}: the vocabulary must "
            "be the model's own, ids 0 to rows - 1 each once, </s> 0, <unk> 1, <pad> last."
        )
    return [by_id[(index - 1) % size] for index in range(size)]


def our_vocabularies(marian: MarianModel) -> dict[str, bytes]:
    """Each side's SentencePiece model rewritten to our ids: Marian's pieces, then those
    its vocabulary lacks, which read as UNK."""
    sizes, written = _sizes(marian.config), {}
    for side, name in _SPM_FILES.items():
        with open(os.path.join(marian.directory, name), "rb") as file:
            proto = file.read()
        pieces = our_pieces(marian, side, sizes[side])
        known = set(pieces)
        pieces += [piece for piece in emitted_pieces(proto, name) if piece not in known]
        written[side] = rewrite(proto, pieces, sizes[side], name)
    return written


_SPM_FILES = {"inputs": "source.spm", "targets": "target.spm"}


def _shared(config: dict[str, Any]) -> bool:
    return bool(config.get("share_encoder_decoder_embeddings", True))


def _sizes(config: dict[str, Any]) -> dict[str, int]:
    """Each side's ids in Marian's vocabulary (its embedding's rows)."""
    target = config["vocab_size"] if _shared(config) else config.get("decoder_vocab_size")
    return {"inputs": config["vocab_size"], "targets": target or config["vocab_size"]}
