"""Marian's tensors as our Transformer's variables, by variable path.

PyTorch's linear weights are [out, in], ours [in, ...]: transposed. A
projection's output rows are head-major in both (row h * K + k), so our
[D, H, K] kernels are the transposes reshaped. Vocabulary-indexed tensors
(embeddings, `final_logits_bias`) are rolled down one row: ours = (Marian's + 1)
mod V.
"""

from __future__ import annotations

import numpy as np

from t2t_keras.importing.marian import MarianModel
from t2t_keras.importing.sentencepiece_ids import UnsupportedModel
from t2t_keras.models.transformer_hparams import TransformerHParams

# Our block -> Marian's layer norm, per layer kind.
_NORMS = {
    "self_attention_block": "self_attn_layer_norm",
    "memory_attention_block": "encoder_attn_layer_norm",
    "feed_forward_block": "final_layer_norm",
}


def our_weights(
    marian: MarianModel, hparams: TransformerHParams, model_name: str
) -> dict[str, np.ndarray]:
    """Every variable of our `model_name` model, by path, from Marian's tensors.

    Raises:
      UnsupportedModel: a tensor missing, or of another shape than the config gives.
    """
    tensors = _Tensors(marian)
    weights = _embeddings(tensors, hparams, model_name)
    for stack, count in (("encoder", hparams.num_encoder_layers),
                         ("decoder", hparams.num_decoder_layers)):  # fmt: skip
        for index in range(count):
            ours, theirs = f"{model_name}/{stack}_{index}", f"model.{stack}.layers.{index}"
            attentions = {"self_attention": "self_attn"}
            if stack == "decoder":
                attentions["memory_attention"] = "encoder_attn"
            for our_name, their_name in attentions.items():
                weights.update(_attention(tensors, f"{ours}/{our_name}", f"{theirs}.{their_name}",
                                          hparams.num_heads))  # fmt: skip
            for block, norm in _NORMS.items():
                if block in ("memory_attention_block",) and stack == "encoder":
                    continue
                weights[f"{ours}/{block}/layer_norm/gamma"] = tensors.get(f"{theirs}.{norm}.weight")
                weights[f"{ours}/{block}/layer_norm/beta"] = tensors.get(f"{theirs}.{norm}.bias")
            for our_name, their_name in (("inner", "fc1"), ("outer", "fc2")):
                weights[f"{ours}/feed_forward/{our_name}/kernel"] = tensors.get(
                    f"{theirs}.{their_name}.weight"
                ).T
                weights[f"{ours}/feed_forward/{our_name}/bias"] = tensors.get(
                    f"{theirs}.{their_name}.bias"
                )
    return weights


class _Tensors:
    """Marian's tensors by name, with or without the "model." prefix; a clear error if absent."""

    def __init__(self, marian: MarianModel) -> None:
        self.marian = marian
        self.tensors = {name.removeprefix("model."): t for name, t in marian.weights.items()}

    def get(self, name: str) -> np.ndarray:
        tensor = self.first(name)
        if tensor is None:
            raise UnsupportedModel(
                f"the weights in {self.marian.directory} lack {name}, which a Marian model of "
                "this config.json has: the weights file is not this model's, or is damaged."
            )
        return tensor

    def first(self, *names: str) -> np.ndarray | None:
        for name in names:
            short = name.removeprefix("model.")
            if short in self.tensors:
                return self.tensors[short]
        return None


def _embeddings(
    tensors: _Tensors, hparams: TransformerHParams, model_name: str
) -> dict[str, np.ndarray]:
    """Token embeddings and the logits bias, each row at our id."""
    source = tensors.first("model.shared.weight", "model.encoder.embed_tokens.weight")
    weights = {f"{model_name}/embedding/embeddings": _rolled(source, hparams.vocab_size, "source")}
    if not hparams.shared_embeddings:
        target = tensors.get("model.decoder.embed_tokens.weight")
        size = hparams.targets_vocab_size()
        weights[f"{model_name}/target_embedding/embeddings"] = _rolled(target, size, "target")
        if not hparams.tie_target_embeddings:
            softmax = tensors.get("lm_head.weight")
            weights[f"{model_name}/softmax_weights/embeddings"] = _rolled(softmax, size, "lm_head")
    bias = tensors.first("final_logits_bias")
    if bias is None:
        bias = np.zeros([1, hparams.targets_vocab_size()], np.float32)
    bias = _rolled(bias.reshape(-1, 1), hparams.targets_vocab_size(), "final_logits_bias")
    weights[f"{model_name}/logits_bias"] = bias.reshape(-1)
    return weights


def _rolled(tensor: np.ndarray | None, rows: int, what: str) -> np.ndarray:
    """Marian's id-indexed rows at our ids: row i of ours is row (i - 1) mod V of theirs."""
    if tensor is None or tensor.shape[0] != rows:
        found = "none" if tensor is None else f"{tensor.shape[0]} rows"
        raise UnsupportedModel(
            f"the {what} tensor has {found}, but config.json gives {rows} ids: the weights "
            "file and config.json are not of one model."
        )
    return np.roll(tensor, 1, axis=0)


def _attention(tensors: _Tensors, ours: str, theirs: str, heads: int) -> dict[str, np.ndarray]:
    """One attention's kernels [D, H, K] and [H, V, D], its query and output biases."""
    kernels = {}
    for our_name, their_name in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
        weight = tensors.get(f"{theirs}.{their_name}.weight")  # [H * K, D]
        kernels[our_name] = weight.T.reshape(weight.shape[1], heads, -1)
    output = tensors.get(f"{theirs}.out_proj.weight")  # [D, H * V]
    value_bias = tensors.get(f"{theirs}.v_proj.bias")
    # softmax weights sum to one: sum_s w_s (v_s + b_v) W_o = sum_s w_s v_s W_o + b_v W_o.
    output_bias = tensors.get(f"{theirs}.out_proj.bias") + output.astype(np.float64) @ value_bias
    return {
        f"{ours}/query": kernels["query"],
        f"{ours}/key": kernels["key"],
        f"{ours}/value": kernels["value"],
        f"{ours}/output": output.T.reshape(heads, -1, output.shape[0]),
        f"{ours}/query_bias": tensors.get(f"{theirs}.q_proj.bias").reshape(heads, -1),
        f"{ours}/output_bias": output_bias.astype(np.float32),
    }
