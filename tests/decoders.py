"""`Decoder`s for tests, built as the binaries build theirs: settings resolved once."""

from __future__ import annotations

from typing import Any

import keras

from t2t_keras import registry
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.models import TransformerHParams
from t2t_keras.models.transformer import Transformer
from t2t_keras.search.decoder import Decoder
from t2t_keras.search.settings import DecodeHParams


def make_decoder(
    model: Transformer,
    beam_size: int | None = None,
    *,
    tree_tokens: TreeTokens | None = None,
    jit_compile: bool = True,
    **given: Any,
) -> Decoder:
    """A Decoder searching with `given` (DecodeHParams fields); unset ones the model's."""
    settings = DecodeHParams(beam_size=beam_size, **given).resolve(model.hparams)
    return Decoder(model, settings.search, tree_tokens, jit_compile)


def build_model(hparams: TransformerHParams, seed: int) -> Transformer:
    """A Transformer of hparams, its weights drawn from `seed`."""
    keras.utils.set_random_seed(seed)
    model = registry.model("transformer")(hparams)
    model.build()
    return model
