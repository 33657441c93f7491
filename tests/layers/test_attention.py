"""Multi-head attention: shapes, masks, weights, the XLA core, the three modes."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_keras.layers import MultiHeadAttention, attention_core, counter_hash
from t2t_keras.layers.attention import (
    _compiled_attention_core,
    _scaled,
    decoding_core,
    uncompiled_cores,
)
from t2t_keras.layers.masks import beam_step_bias, causal_bias, padding_bias


def make_layer(use_xla: bool = True, **overrides) -> MultiHeadAttention:
    config = {"num_heads": 2, "key_depth": 3, "value_depth": 5, "use_xla": use_xla}
    return MultiHeadAttention(**{**config, **overrides})


def test_separate_key_and_value_depths() -> None:
    layer = make_layer()
    query, memory = tf.random.normal([2, 4, 8]), tf.random.normal([2, 6, 8])
    output = layer(query, memory)
    assert output.shape == (2, 4, 8)
    shapes = {w.path.split("/")[-1]: tuple(w.shape) for w in layer.weights}
    assert shapes == {"query": (8, 2, 3), "key": (8, 2, 3), "value": (8, 2, 5), "output": (2, 5, 8)}


def test_weights_sum_to_one_and_ignore_masked_keys() -> None:
    layer = make_layer()
    ids = tf.constant([[4, 5, 1, 0, 0]])
    x = tf.random.normal([1, 5, 8])
    _, weights = layer.call_with_weights(x, bias=padding_bias(ids))
    assert weights.shape == (1, 2, 5, 5) and weights.dtype == tf.float32
    np.testing.assert_allclose(tf.reduce_sum(weights, -1).numpy(), 1.0, rtol=1e-6)
    assert np.all(weights.numpy()[..., 3:] == 0.0)


def test_core_matches_a_plain_computation() -> None:
    q, k, v = (tf.random.normal(shape) for shape in ([1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 6]))
    output, weights = attention_core(q, k, v, None, return_weights=True)
    scores = np.einsum("bhtk,bhsk->bhts", q.numpy(), k.numpy()) / 2.0
    expected = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(output.numpy(), expected @ v.numpy(), rtol=1e-5, atol=1e-6)


def test_decoding_core_computes_what_the_core_does() -> None:
    """Keys by queries, as decoding runs it: the same output, bias broadcast as the
    core's, a fully masked row finite and uniform, also XLA-compiled."""
    q, k, v = (tf.random.normal(shape) for shape in ([2, 3, 5, 4], [2, 3, 7, 4], [2, 3, 7, 6]))
    bias = tf.where(tf.random.uniform([2, 1, 5, 7], seed=1) < 0.3, -1e9, 0.0)
    bias = tf.tensor_scatter_nd_update(bias, [[0, 0, 2]], tf.fill([1, 7], -1e9))
    for given in (bias, padding_bias(tf.constant([[4, 4, 4, 0, 0, 0, 0], [4] * 7])), None):
        expected, _ = attention_core(q, k, v, given)
        np.testing.assert_allclose(decoding_core(q, k, v, given), expected, rtol=1e-5, atol=1e-6)
        compiled = tf.function(decoding_core, jit_compile=True)(q, k, v, given)
        np.testing.assert_allclose(compiled, expected, rtol=1e-5, atol=1e-6)
    uniform = decoding_core(q, k, v, bias)[0, :, 2]  # Every key masked: their mean.
    np.testing.assert_allclose(uniform, tf.reduce_mean(v[0], axis=1), rtol=1e-5, atol=1e-6)
    half = [tf.cast(x, tf.float16) for x in (q, k, v, bias)]  # The bias's -1e9 is -inf.
    assert np.all(np.isfinite(decoding_core(*half).numpy()))


def test_xla_and_plain_core_agree() -> None:
    compiled, plain = make_layer(use_xla=True), make_layer(use_xla=False)
    x = tf.random.normal([2, 7, 8])
    traces = _compiled_attention_core.experimental_get_tracing_count()
    compiled(x)
    assert _compiled_attention_core.experimental_get_tracing_count() > traces
    traces = _compiled_attention_core.experimental_get_tracing_count()
    plain(tf.random.normal([3, 9, 8]))  # A new shape, yet no trace of the compiled core.
    assert _compiled_attention_core.experimental_get_tracing_count() == traces
    plain.set_weights(compiled.get_weights())
    bias = causal_bias(7)
    np.testing.assert_allclose(compiled(x, bias=bias), plain(x, bias=bias), atol=1e-5)


def test_a_compiled_layer_runs_its_core_uncompiled_only_within_uncompiled_cores() -> None:
    """What a model's building pass runs: the same values, without an XLA compilation."""
    layer = make_layer(use_xla=True)
    x = tf.random.normal([2, 5, 8])
    compiled = layer(x)
    assert layer._core is _compiled_attention_core
    with uncompiled_cores():
        assert layer._core is attention_core
        plain = layer(x)
    assert layer._core is _compiled_attention_core
    np.testing.assert_allclose(plain, compiled, atol=1e-5)


def test_attention_dropout_only_in_training() -> None:
    layer = make_layer(dropout=0.5)
    x = tf.random.normal([2, 5, 8])
    np.testing.assert_array_equal(layer(x), layer(x))
    first, second = layer(x, training=True), layer(x, training=True)
    assert not np.allclose(first, layer(x)) and not np.allclose(first, second)


def test_dropout_applies_to_the_weights() -> None:
    """Dropped weights are zeroed, kept ones scaled by 1 / (1 - rate)."""
    q, k, v = (tf.random.normal([1, 1, 6, 4]) for _ in range(3))
    _, weights = attention_core(q, k, v, None, return_weights=True)
    seed = tf.constant([1, 2], tf.int64)
    dropped_output, _ = attention_core(q, k, v, None, 0.5, seed)
    mask = counter_hash.dropout(tf.ones_like(weights), 0.5, seed)
    expected = np.einsum("bhts,bhsv->bhtv", (weights * mask).numpy(), v.numpy())
    np.testing.assert_allclose(dropped_output, expected, rtol=1e-5, atol=1e-6)


def test_fully_masked_rows_stay_finite_in_float16() -> None:
    q, k, v = (tf.random.normal([1, 1, 2, 4], dtype=tf.float16) for _ in range(3))
    bias = tf.cast(padding_bias(tf.constant([[0, 0]])), tf.float16)  # -inf in float16
    output, _ = attention_core(q, k, v, bias)
    assert np.all(np.isfinite(output.numpy()))


def test_each_mode_returns_one_type() -> None:
    layer = make_layer()
    query, memory = tf.random.normal([2, 3, 8]), tf.random.normal([2, 6, 8])
    output = layer(query, memory)
    assert isinstance(output, tf.Tensor) and output.shape == (2, 3, 8)
    with_weights, weights = layer.call_with_weights(query, memory)
    assert weights.shape == (2, 2, 3, 6)
    np.testing.assert_array_equal(with_weights, output)
    prefilled = layer.project_memory(memory)
    cached, cache = layer.call_cached(query, prefilled)
    assert cached.shape == (2, 3, 8) and cache is prefilled  # Prefill: the cache stays.
    step, cache = layer.call_cached(query[:, :1], layer.empty_cache(2, 4), cache_index=0)
    assert step.shape == (2, 1, 8) and set(cache) == {"key", "value"}
    assert cache["key"].shape == (2, 2, 1, 4, 3) and cache["value"].shape == (2, 2, 1, 4, 5)


def graph_ops(function: tf.types.experimental.ConcreteFunction) -> set[str]:
    """The op types of a traced function's graph and of every function it calls."""
    graph = function.graph.as_graph_def()
    return {node.op for node in graph.node} | {
        node.op for called in graph.library.function for node in called.node_def
    }


def test_decoding_modes_have_no_einsum_or_rsqrt() -> None:
    """Every process that loads a compiled search lowers its graph to XLA again, and
    TensorFlow lowers an Einsum or an Rsqrt alone through MLIR (about 10 ms each on
    a 2-core EPYC, against about 1 ms for a MatMul): the decoding modes' products
    are MatMuls and the queries' scale a constant, which scales as the Rsqrt did."""
    # Uncompiled cores: this file's other tests relax the compiled core's shapes.
    layer = make_layer(use_xla=False, key_depth=7)  # 1 / sqrt(7) is not exact in float32.
    query, memory = tf.random.normal([4, 1, 8]), tf.random.normal([2, 6, 8])

    @tf.function(autograph=False)
    def decode(query: tf.Tensor, memory: tf.Tensor) -> tf.Tensor:
        prefilled, _ = layer.call_cached(query, layer.project_memory(memory))
        step, _ = layer.call_cached(query, layer.empty_cache(2, 3, 2), cache_index=0)
        return prefilled + step

    ops = graph_ops(decode.get_concrete_function(query, memory))
    assert "MatMul" in ops and not {"Einsum", "Rsqrt"} & ops
    heads = tf.random.normal([2, 2, 3, 7])
    scale = tf.math.rsqrt(tf.cast(tf.shape(heads)[-1], tf.float32))
    np.testing.assert_array_equal(_scaled(heads), heads * scale)


def test_cached_steps_equal_full_causal_attention() -> None:
    layer = make_layer()
    x = tf.random.normal([2, 4, 8])
    full = layer(x, bias=causal_bias(4))
    cache = layer.empty_cache(2, 6)
    for index in range(4):
        step, cache = layer.call_cached(
            x[:, index : index + 1], cache, bias=one_row_bias(index, 6), cache_index=index
        )
        np.testing.assert_allclose(step[:, 0], full[:, index], atol=1e-5)
    # Slots 0..3 hold the keys of the four positions, the rest are still zero.
    keys = cache["key"][:, :, 0]
    np.testing.assert_allclose(keys[:, :, :4], layer.project_memory(x)["key"], atol=1e-6)
    assert not np.any(keys[:, :, 4:])


def one_row_bias(index: int, length: int) -> tf.Tensor:
    """The one-step bias of sentences with a single row (greedy search)."""
    return beam_step_bias(tf.zeros([1, 1, length], tf.int32), index)


def test_beams_sharing_a_cache_see_only_their_own_history() -> None:
    # Two sentences of two beams each. Every step each beam's next input comes
    # from a chosen parent row; the cache is never reordered, the ancestry is.
    layer = make_layer()
    steps, rows, length = 4, 2, 5
    inputs = tf.random.normal([steps, 2 * rows, 8])
    parents = [[0, 1, 2, 3], [1, 1, 3, 2], [0, 0, 2, 3], [1, 0, 3, 3]]
    cache = layer.empty_cache(2, length, rows)
    ancestors = tf.zeros([2, rows, length], tf.int32)
    histories = [[] for _ in range(2 * rows)]
    for index in range(steps):
        order = tf.constant(parents[index])
        flat = tf.gather(tf.reshape(ancestors, [-1, length]), order)
        own = tf.range(rows)[tf.newaxis, :, tf.newaxis]
        ancestors = tf.where(tf.range(length) == index, own, tf.reshape(flat, [2, rows, length]))
        histories = [
            histories[parent] + [inputs[index, row]] for row, parent in enumerate(parents[index])
        ]
        step, cache = layer.call_cached(
            inputs[index][:, tf.newaxis], cache, beam_step_bias(ancestors, index), index
        )
        for row, history in enumerate(histories):
            sequence = tf.stack(history)[tf.newaxis]  # [1, index + 1, 8]
            full = layer(sequence, bias=causal_bias(index + 1))
            np.testing.assert_allclose(step[row, 0], full[0, -1], atol=1e-5)


def test_one_step_builds_an_unbuilt_layer() -> None:
    layer = make_layer()
    step, _ = layer.call_cached(
        tf.ones([1, 1, 8]), layer.empty_cache(1, 2), one_row_bias(0, 2), cache_index=0
    )
    assert layer.built and step.shape == (1, 1, 8)


def test_precomputed_memory_equals_attending_to_memory() -> None:
    layer = make_layer()
    query, memory = tf.random.normal([2, 3, 8]), tf.random.normal([2, 6, 8])
    expected = layer(query, memory)
    output, _ = layer.call_cached(query, layer.project_memory(memory))
    np.testing.assert_allclose(output, expected, atol=1e-6)


def test_rows_of_a_sentence_share_its_memory() -> None:
    layer = make_layer()
    query, memory = tf.random.normal([6, 1, 8]), tf.random.normal([2, 5, 8])
    shared, _ = layer.call_cached(query, layer.project_memory(memory))  # 3 rows per sentence
    repeated = layer(query, tf.repeat(memory, 3, axis=0))
    np.testing.assert_allclose(shared, repeated, atol=1e-6)


def test_config_round_trip() -> None:
    layer = make_layer(dropout=0.25, use_xla=False)
    copy = MultiHeadAttention.from_config(layer.get_config())
    assert (copy.key_depth, copy.value_depth, copy.dropout) == (3, 5, 0.25)
    assert "use_xla" not in layer.get_config()  # How a process runs it, not the layer.
