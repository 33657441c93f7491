"""The Transformer model: sizes, masks, sharing, caching, precision, saving."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_keras import registry
from t2t_keras.errors import UserError
from t2t_keras.layers.position import sinusoid
from t2t_keras.models import TransformerHParams, count_params
from t2t_keras.models.transformer import Transformer

TINY = TransformerHParams(
    vocab_size=12,
    num_encoder_layers=2,
    num_decoder_layers=2,
    d_model=8,
    d_ff=16,
    num_heads=2,
    d_k=4,
    d_v=3,
    max_length=16,
)
INPUTS = tf.constant([[5, 6, 7, 8, 1, 0], [9, 4, 1, 0, 0, 0]])
TARGETS = tf.constant([[3, 4, 5, 1], [6, 1, 0, 0]])


def build(hparams: TransformerHParams = TINY, **kwargs) -> Transformer:
    model = registry.model("transformer")(hparams, **kwargs)
    model.build()
    return model


@pytest.fixture(scope="module")
def model() -> Transformer:
    keras.utils.set_random_seed(1)
    return build()


def logits(model: Transformer, inputs: tf.Tensor, targets: tf.Tensor) -> np.ndarray:
    return model({"inputs": inputs, "targets": targets}).numpy()


# Every matrix there is: two vocabularies, three embeddings, a parser's leaf inputs.
ALL_MATRICES = TINY.override(
    "d_model=64,d_ff=128,d_k=16,d_v=16,vocab_size=300,target_vocab_size=200,"
    "shared_embeddings=false,tie_target_embeddings=false,"
    "leaf_positions=true,leaf_words=true,leaf_id=4"
)


def _fans(path: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """A kernel's (fan_in, fan_out), attention heads folded into the matrix."""
    if path.endswith("attention/output"):  # [H, V, D]
        return shape[0] * shape[1], shape[2]
    return shape[0], int(np.prod(shape[1:]))


@pytest.mark.parametrize("stddev", [0.0, 0.05])
def test_initializer_stddev_sets_every_kernel_and_token_embedding(stddev: float) -> None:
    keras.utils.set_random_seed(1)
    model = build(ALL_MATRICES.override(f"initializer_stddev={stddev}"))
    matrices = [w for w in model.weights if len(w.shape) >= 2]
    # Per encoder layer 4 attention and 2 FFN kernels, per decoder layer 8 and 2;
    # three token embeddings; two leaf projections.
    assert len(matrices) == 2 * 6 + 2 * 10 + 3 + 2
    for weight in matrices:
        values = weight.numpy()
        if weight.path.endswith("/embeddings"):
            expected = stddev or 64**-0.5
        elif stddev:
            expected = stddev
        else:  # Glorot uniform: bounded by sqrt(6 / (fan_in + fan_out)).
            limit = (6.0 / sum(_fans(weight.path, weight.shape))) ** 0.5
            assert np.abs(values).max() <= limit, weight.path
            expected = limit / 3**0.5
        assert abs(values.std() / expected - 1) < 0.1, (weight.path, values.std(), expected)
        assert abs(values.mean()) < 0.1 * expected, weight.path


# Checkpoints are keyed by these paths (t2t_keras.run.weights): they must never change.
WEIGHT_PATHS = [
    "decoder_0/feed_forward/inner/bias",
    "decoder_0/feed_forward/inner/kernel",
    "decoder_0/feed_forward/outer/bias",
    "decoder_0/feed_forward/outer/kernel",
    "decoder_0/feed_forward_block/layer_norm/beta",
    "decoder_0/feed_forward_block/layer_norm/gamma",
    "decoder_0/memory_attention/key",
    "decoder_0/memory_attention/output",
    "decoder_0/memory_attention/query",
    "decoder_0/memory_attention/value",
    "decoder_0/memory_attention_block/layer_norm/beta",
    "decoder_0/memory_attention_block/layer_norm/gamma",
    "decoder_0/self_attention/key",
    "decoder_0/self_attention/output",
    "decoder_0/self_attention/query",
    "decoder_0/self_attention/value",
    "decoder_0/self_attention_block/layer_norm/beta",
    "decoder_0/self_attention_block/layer_norm/gamma",
    "decoder_norm/beta",
    "decoder_norm/gamma",
    "decoder_positions/table",
    "embedding/embeddings",
    "encoder_0/feed_forward/inner/bias",
    "encoder_0/feed_forward/inner/kernel",
    "encoder_0/feed_forward/outer/bias",
    "encoder_0/feed_forward/outer/kernel",
    "encoder_0/feed_forward_block/layer_norm/beta",
    "encoder_0/feed_forward_block/layer_norm/gamma",
    "encoder_0/self_attention/key",
    "encoder_0/self_attention/output",
    "encoder_0/self_attention/query",
    "encoder_0/self_attention/value",
    "encoder_0/self_attention_block/layer_norm/beta",
    "encoder_0/self_attention_block/layer_norm/gamma",
    "encoder_norm/beta",
    "encoder_norm/gamma",
    "encoder_positions/table",
    "softmax_weights/embeddings",
    "target_embedding/embeddings",
]


def test_weight_paths_are_the_checkpoint_keys() -> None:
    """One layer per stack, with every optional weight: pre-norm, learned positions, untied."""
    hparams = dataclasses.replace(TINY, num_encoder_layers=1, num_decoder_layers=1).override(
        "layer_norm_position=pre,position_encoding=learned,"
        "shared_embeddings=false,tie_target_embeddings=false"
    )
    model = build(hparams, name="transformer")
    assert sorted(w.path for w in model.weights) == [f"transformer/{p}" for p in WEIGHT_PATHS]


def test_unbuilt_model_builds_for_attention_weights_and_decoding() -> None:
    weights = Transformer(TINY).attention_weights(INPUTS, TARGETS)
    assert [w.shape for w in weights["encoder_decoder"]] == [(2, 2, 4, 6)] * 2
    state, step = Transformer(TINY).start_decoding(INPUTS, cache_length=3)
    logits, state = step(state, tf.constant(0), tf.zeros([2], tf.int32), None)
    assert logits.shape == (2, 12) and sorted(state) == ["ancestors", "layer_0", "layer_1"]


def test_logits_are_float32_over_the_vocabulary(model: Transformer) -> None:
    assert logits(model, INPUTS, TARGETS).shape == (2, 4, 12)


def test_causality(model: Transformer) -> None:
    """Changing targets after position t leaves the logits up to t alone."""
    changed = tf.constant([[3, 4, 9, 9], [6, 1, 7, 7]])
    before, after = logits(model, INPUTS, TARGETS), logits(model, INPUTS, changed)
    np.testing.assert_allclose(after[:, :3], before[:, :3], atol=1e-6)
    assert not np.allclose(after[:, 3], before[:, 3])


def test_padding_inputs_changes_nothing(model: Transformer) -> None:
    padded = tf.pad(INPUTS, [[0, 0], [0, 5]])
    np.testing.assert_allclose(
        logits(model, padded, TARGETS), logits(model, INPUTS, TARGETS), atol=1e-5
    )


def test_one_embedding_matrix_serves_all_three_uses(model: Transformer) -> None:
    embeddings = [w for w in model.weights if "embedding" in w.path]
    assert len(embeddings) == 1 and embeddings[0].path.endswith("/embedding/embeddings")
    # The softmax is the transpose: hidden @ E^T.
    hidden = tf.random.normal([1, 2, 8])
    expected = hidden.numpy() @ embeddings[0].numpy().T
    np.testing.assert_allclose(model.softmax_weights.project(hidden), expected, rtol=1e-5)
    assert model.softmax_weights is model.source_embedding is model.target_embedding


def test_inputs_are_scaled_by_sqrt_d_model(model: Transformer) -> None:
    table = model.source_embedding.embeddings.numpy()
    np.testing.assert_allclose(
        model.source_embedding(tf.constant([[3]]))[0, 0], table[3] * 8**0.5, rtol=1e-6
    )


def test_cached_decoding_reproduces_teacher_forcing(model: Transformer) -> None:
    expected = logits(model, INPUTS, TARGETS)
    state, step = model.start_decoding(INPUTS, cache_length=6)
    previous = tf.zeros([2], tf.int32)
    for index in range(TARGETS.shape[1]):
        step_logits, state = step(state, tf.constant(index), previous, None)
        np.testing.assert_allclose(step_logits, expected[:, index], atol=1e-4)
        previous = TARGETS[:, index]


@pytest.mark.parametrize(
    "overrides",
    [
        "layer_norm_position=pre",
        "position_encoding=learned",
        "leaf_positions=true,leaf_id=4",
        "leaf_words=true,leaf_positions=true,leaf_id=4",
        "ffn_activation=swish,attention_bias=true,logits_bias=true,position_layout=halves",
        "ffn_activation=gelu,position_start=2,decoder_start=zero",
    ],
)
def test_cached_decoding_of_variants(overrides: str) -> None:
    model = build(TINY.override(overrides))
    randomize_biases(model)
    expected = logits(model, INPUTS, TARGETS)
    state, step = model.start_decoding(INPUTS, cache_length=4)
    previous = tf.zeros([2], tf.int32)
    for index in range(4):
        step_logits, state = step(state, tf.constant(index), previous, None)
        np.testing.assert_allclose(step_logits, expected[:, index], atol=1e-4)
        previous = TARGETS[:, index]


def randomize_biases(model: Transformer) -> None:
    """Every bias and layer norm offset of the model, drawn from N(0, 0.5)."""
    rng = np.random.default_rng(3)
    for weight in model.weights:
        if weight.path.endswith(("bias", "beta")):
            weight.assign(rng.normal(0.0, 0.5, weight.shape).astype(np.float32))


def test_pretrained_models_options_are_honoured() -> None:
    """Each option of a pretrained model changes the logits as it says, and only then."""
    plain = build(TINY)
    expected = logits(plain, INPUTS, TARGETS)
    options = build(TINY.override("attention_bias=true,logits_bias=true"))
    plain_weights = {w.path.split("/", 1)[1]: w for w in plain.weights}
    for weight in options.weights:  # The same weights, and zero biases: the same logits.
        if weight.path.split("/", 1)[1] in plain_weights:
            weight.assign(plain_weights[weight.path.split("/", 1)[1]])
    np.testing.assert_allclose(logits(options, INPUTS, TARGETS), expected, atol=1e-5)
    options.logits_bias.assign(np.arange(12, dtype=np.float32))
    shifted = logits(options, INPUTS, TARGETS)
    np.testing.assert_allclose(
        shifted - expected, np.broadcast_to(np.arange(12.0), shifted.shape), atol=1e-4
    )
    query_bias = options.decoder_layers[0].memory_attention.query_bias
    query_bias.assign(np.ones(query_bias.shape, np.float32))
    assert np.abs(logits(options, INPUTS, TARGETS) - shifted).max() > 1e-3


def test_a_zero_start_is_a_pad_start_with_a_zero_pad_row() -> None:
    """decoder_start=zero (CTranslate2's Marian models) adds no token at the decoder's
    first position: the same as starting from the PAD row when that row is zero."""
    keras.utils.set_random_seed(4)
    plain, zero = build(TINY), build(TINY.override("decoder_start=zero"))
    zero.set_weights(plain.get_weights())
    assert np.abs(logits(zero, INPUTS, TARGETS) - logits(plain, INPUTS, TARGETS)).max() > 1e-3
    table = plain.source_embedding.embeddings
    table.assign(tf.tensor_scatter_nd_update(table, [[0]], tf.zeros([1, 8])))
    zero.set_weights(plain.get_weights())
    # PAD's own logit differs (its row is zero in one model only); every other is the same.
    np.testing.assert_allclose(
        logits(zero, INPUTS, TARGETS)[..., 1:], logits(plain, INPUTS, TARGETS)[..., 1:], atol=1e-5
    )


def test_halves_sinusoid_is_sines_then_cosines() -> None:
    positions = np.arange(7)
    rates = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    angles = positions[:, None] * rates
    halves = sinusoid(tf.constant(positions), 8, "halves").numpy()
    np.testing.assert_allclose(
        halves, np.concatenate([np.sin(angles), np.cos(angles)], 1), atol=1e-6
    )
    interleaved = sinusoid(tf.constant(positions), 8).numpy()
    np.testing.assert_allclose(interleaved[:, 0::2], halves[:, :4], atol=1e-6)


def test_xla_on_and_off_give_the_same_logits(model: Transformer) -> None:
    plain = build(use_xla=False)
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(
        logits(plain, INPUTS, TARGETS), logits(model, INPUTS, TARGETS), atol=1e-5
    )


def test_dropout_only_when_training() -> None:
    model = build(TINY.override("dropout=0.5,attention_dropout=0.5,relu_dropout=0.5"))
    features = {"inputs": INPUTS, "targets": TARGETS}
    np.testing.assert_array_equal(model(features), model(features))
    assert not np.allclose(model(features, training=True), model(features))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_and_decodes(model: Transformer, policy: str) -> None:
    from decoders import make_decoder

    keras.config.set_dtype_policy(policy)
    try:
        mixed = build()
        mixed.set_weights(model.get_weights())
        # Close to float32, and finite even for an all-PAD row.
        padded_inputs = tf.concat([INPUTS, tf.zeros([1, 6], tf.int32)], axis=0)
        padded_targets = tf.concat([TARGETS, tf.zeros([1, 4], tf.int32)], axis=0)
        mixed_logits = logits(mixed, padded_inputs, padded_targets)
        assert np.all(np.isfinite(mixed_logits))
        np.testing.assert_allclose(mixed_logits[:2], logits(model, INPUTS, TARGETS), atol=0.1)
        with tf.GradientTape() as tape:
            output = mixed({"inputs": INPUTS, "targets": TARGETS}, training=True)
            loss = tf.reduce_mean(output)
        gradients = tape.gradient(loss, mixed.trainable_variables)
        assert output.dtype == tf.float32
        assert mixed.source_embedding.embeddings.dtype == "float32"
        assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in gradients)
        ids, scores = make_decoder(mixed, beam_size=2, return_beams=True)(INPUTS)
        assert ids.shape[:2] == (2, 2) and np.all(np.isfinite(scores.numpy()))
    finally:
        keras.config.set_dtype_policy("float32")


def test_keras_file_round_trip(model: Transformer, tmp_path) -> None:
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, Transformer) and loaded.hparams == TINY
    np.testing.assert_array_equal(logits(loaded, INPUTS, TARGETS), logits(model, INPUTS, TARGETS))


def test_the_config_holds_the_model_not_how_this_process_runs_it(model: Transformer) -> None:
    config = model.get_config()
    assert "use_xla" not in config
    layer = model.encoder_layers[0]
    assert "use_xla" not in layer.get_config()
    # Configs saved before (.keras files) name use_xla: they still load.
    earlier = Transformer.from_config({**config, "use_xla": False})
    assert earlier.hparams == TINY and not earlier.use_xla
    earlier.build()
    earlier.set_weights(model.get_weights())
    np.testing.assert_allclose(
        logits(earlier, INPUTS, TARGETS), logits(model, INPUTS, TARGETS), rtol=1e-5, atol=1e-5
    )


def test_weights_file_round_trip(model: Transformer, tmp_path) -> None:
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    fresh = build()
    fresh.load_weights(path)
    np.testing.assert_array_equal(logits(fresh, INPUTS, TARGETS), logits(model, INPUTS, TARGETS))


def test_inputs_longer_than_max_length_are_refused(model: Transformer) -> None:
    too_long = tf.ones([1, 17], tf.int32)
    with pytest.raises(UserError, match="inputs of length 17 exceed the model's max_length of 16"):
        model({"inputs": too_long, "targets": TARGETS[:1]})


def test_vocab_size_is_required() -> None:
    with pytest.raises(UserError, match="needs hparams.vocab_size"):
        Transformer(dataclasses.replace(TINY, vocab_size=0))


# A parser's shape in miniature: many source pieces, a few target symbols.
OWN_TARGET_SIZE = dataclasses.replace(
    TINY, vocab_size=50, target_vocab_size=7, shared_embeddings=False
)
WIDE_INPUTS = tf.constant([[45, 30, 12, 8, 1, 0], [49, 4, 1, 0, 0, 0]])


@pytest.mark.parametrize("tied", [True, False])
def test_a_target_vocabulary_of_its_own_size(tied: bool) -> None:
    from decoders import make_decoder

    from t2t_keras.training.loss import smoothed_cross_entropy_sum

    hparams = dataclasses.replace(OWN_TARGET_SIZE, tie_target_embeddings=tied)
    keras.utils.set_random_seed(1)
    model = build(hparams, name="transformer")
    embeddings = {w.path: tuple(w.shape) for w in model.weights if "embeddings" in w.path}
    expected = {"transformer/embedding/embeddings": (50, 8)}
    expected["transformer/target_embedding/embeddings"] = (7, 8)
    if not tied:
        expected["transformer/softmax_weights/embeddings"] = (7, 8)
    assert embeddings == expected
    assert model.count_params() == count_params(hparams)
    assert logits(model, WIDE_INPUTS, TARGETS).shape == (2, 4, 7)

    # One step of training moves the weights and keeps the loss finite.
    optimizer = keras.optimizers.Adam(1e-2)
    before = [w.numpy() for w in model.trainable_weights]
    with tf.GradientTape() as tape:
        output = model({"inputs": WIDE_INPUTS, "targets": TARGETS}, training=True)
        loss, _ = smoothed_cross_entropy_sum(output, TARGETS, 0.1)
    optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    assert np.isfinite(loss.numpy())
    moved = [
        not np.array_equal(b, w.numpy())
        for b, w in zip(before, model.trainable_weights, strict=True)
    ]
    assert all(moved)

    for beam_size in (1, 3):
        search = make_decoder(model, beam_size=beam_size, return_beams=True, jit_compile=False)
        ids, scores = search(WIDE_INPUTS)
        assert ids.shape[:2] == (2, beam_size) and np.all(np.isfinite(scores.numpy()))
        assert int(tf.reduce_min(ids)) >= 0 and int(tf.reduce_max(ids)) < 7


def test_target_vocab_size_zero_means_vocab_size() -> None:
    unshared = TINY.override("shared_embeddings=false")
    assert unshared.targets_vocab_size() == TINY.vocab_size == 12
    assert build(unshared).target_embedding.embeddings.shape == (12, 8)
    assert OWN_TARGET_SIZE.targets_vocab_size() == 7


@pytest.mark.parametrize("leaf_input", ["leaf_positions", "leaf_words"])
def test_leaf_inputs_follow_each_beams_own_leaves(leaf_input: str) -> None:
    # Two beams per sentence that wrote different tokens swap places: each row's
    # logits must then be those of the sequence its new parent wrote.
    model = build(TINY.override(f"{leaf_input}=true,leaf_id=4"))
    sequences = tf.constant([[4, 4, 5], [5, 6, 4], [4, 5, 4], [6, 6, 6]])
    inputs = tf.repeat(INPUTS, 2, axis=0)
    state, step = model.start_decoding(INPUTS, cache_length=4, beam_size=2)
    previous = tf.zeros([4], tf.int32)
    for index in range(2):
        _, state = step(state, tf.constant(index), previous, tf.range(4))
        previous = sequences[:, index]
    swap = tf.constant([1, 0, 3, 2])
    step_logits, _ = step(state, tf.constant(2), tf.gather(previous, swap), swap)
    expected = logits(model, inputs, tf.gather(sequences, swap))[:, 2]
    np.testing.assert_allclose(step_logits, expected, atol=1e-4)
    unswapped = logits(model, inputs, sequences)[:, 2]
    assert not np.allclose(step_logits, unswapped, atol=1e-4)


@pytest.mark.parametrize("leaf_input", ["leaf_positions", "leaf_words"])
def test_leaf_inputs_need_the_leaf_id(leaf_input: str) -> None:
    with pytest.raises(UserError, match="leaf_id"):
        build(TINY.override(f"{leaf_input}=true"))


def test_leaf_words_read_the_first_piece_of_each_word() -> None:
    # Ids 5-9 start words and 4 continues one: [5, 4, 6, EOS, PAD] is words 0
    # (pieces 0-1) and 1 (piece 2), then EOS as word 2; nothing is word 3 or 4.
    model = build(TINY.override("leaf_words=true,leaf_id=4"))
    model.set_word_starts([5, 6, 7, 8, 9])
    memory = tf.random.stateless_normal([1, 5, 8], seed=[1, 2])
    words = model._word_memory(tf.constant([[5, 4, 6, 1, 0]]), memory).numpy()[0]
    np.testing.assert_allclose(words[:3], tf.gather(memory[0], [0, 2, 3]), atol=1e-6)
    np.testing.assert_array_equal(words[3:], 0.0)


def test_leaf_positions_give_the_pieces_of_a_word_its_position() -> None:
    # Ids 5-9 start words and 4 continues one: in [5, 4, 6, EOS] the word 6 and
    # EOS take the encoder positions they have in [5, 6, EOS], the decoder's
    # count of leaves; until the table is set, each piece is its own position.
    model = build(TINY.override("leaf_positions=true,leaf_id=4"))
    split, whole = tf.constant([[5, 4, 6, 1]]), tf.constant([[5, 6, 1]])

    def embedded(ids: tf.Tensor) -> np.ndarray:
        return model._embed(model.source_embedding, ids, 0, 0, False).numpy()[0]

    assert not np.allclose(embedded(split)[2], embedded(whole)[1])
    model.set_word_starts([5, 6, 7, 8, 9])
    np.testing.assert_allclose(embedded(split)[2:], embedded(whole)[1:], atol=1e-6)
    piece = model.source_embedding(tf.constant([4])).numpy()[0]
    np.testing.assert_allclose(
        embedded(split)[1], piece + sinusoid(tf.constant([0]), 8)[0], atol=1e-6
    )
