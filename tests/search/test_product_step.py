"""The product step (`models.product_step`): its structure, run with float32 products,
searches as the model's own step does; with bfloat16 products its logits stay near
float32's, and a search in bfloat16 ends as every search must."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from decoders import build_model

from t2t_keras.data.ids import EOS_ID, PAD_ID
from t2t_keras.models.product_step import ProductDecoding
from t2t_keras.search.decoder import Decoder
from t2t_keras.search.settings import DecodeHParams
from tests.search.test_search import INPUTS, TINY

# Every option the product step reads the weights of differently.
VARIANTS = {
    "post-norm": TINY,
    "pre-norm, biases, swish, d_v 12": TINY.override(
        "layer_norm_position=pre,attention_bias=true,logits_bias=true,ffn_activation=swish,d_v=12"
    ),
}


def _randomized(hparams, seed: int):
    """A model of `hparams` whose biases and norms are random too (they start 0 and 1)."""
    model = build_model(hparams, seed)
    rng = np.random.default_rng(seed)
    for variable in model.variables:
        if len(variable.shape) == 1 and "seed" not in variable.path:
            variable.assign(variable.numpy() + rng.normal(0, 0.3, variable.shape))
    return model


def test_float32_products_search_as_the_models_own_step() -> None:
    """Beam search, whose first position takes the one-row step (greedy's path, the
    model's `start_decoding`, is the logits test's), on every option at once."""
    model = _randomized(VARIANTS["pre-norm, biases, swish, d_v 12"], seed=3)
    settings = DecodeHParams(beam_size=3, alpha=0.6, return_beams=True)
    search = settings.resolve(model.hparams).search
    own = Decoder(model, search, jit_compile=False)
    products = Decoder(model, search, jit_compile=False)
    products.decoding = ProductDecoding(model, tf.float32)
    ids, scores = own(INPUTS)
    product_ids, product_scores = products(INPUTS)
    np.testing.assert_array_equal(product_ids.numpy(), ids.numpy())
    np.testing.assert_allclose(product_scores.numpy(), scores.numpy(), atol=1e-4)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_bfloat16_logits_stay_near_float32(variant: str) -> None:
    """Three steps of a beam of two, teacher-forced alike: bfloat16 products' logits
    against float32's, within bfloat16's rounding of inputs and weights."""
    model = _randomized(VARIANTS[variant], seed=4)
    tokens = tf.constant([[4, 7, 9], [11, 5, 3], [2, 2, 8]] * 2, tf.int32)  # [B * K, 3]
    inputs = tf.gather(INPUTS, [0, 0, 1, 1, 2, 2])[::2]

    def logits(decoding) -> np.ndarray:
        state, step = decoding.start_decoding(inputs, 4, beam_size=2)
        steps = []
        previous = tf.fill([6], EOS_ID)
        for index in range(3):
            step_logits, state = step(state, tf.constant(index), previous, None)
            steps.append(step_logits.numpy())
            previous = tokens[:, index]
        return np.stack(steps)

    expected = logits(model)
    bfloat16 = logits(ProductDecoding(model, tf.bfloat16))
    assert not np.allclose(bfloat16, expected, atol=1e-5, rtol=0)  # bfloat16 it is.
    scale = np.abs(expected).max()
    np.testing.assert_allclose(bfloat16, expected, atol=0.05 * scale, rtol=0)
    assert np.mean(np.abs(bfloat16 - expected)) < 0.01 * scale


def test_a_bfloat16_search_ends_every_hypothesis_as_the_rules_say() -> None:
    model = _randomized(TINY, seed=5)
    search = DecodeHParams(beam_size=3, alpha=0.6).resolve(model.hparams).search
    ids, scores = Decoder(model, search, precision="bfloat16")(INPUTS)
    assert np.isfinite(scores.numpy()).all()
    for row in ids.numpy()[:, 0]:
        assert EOS_ID in row
        end = list(row).index(EOS_ID)
        assert end >= 1 and PAD_ID not in row[:end] and (row[end + 1 :] == PAD_ID).all()


def test_an_unknown_precision_is_refused() -> None:
    model = build_model(TINY, seed=6)
    search = DecodeHParams().resolve(model.hparams).search
    with pytest.raises(ValueError, match="precision: one of float32, bfloat16, not .float16."):
        Decoder(model, search, precision="float16")
