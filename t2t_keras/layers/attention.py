"""Multi-head attention with separate key/value depths, an XLA-compiled core
and a decoding cache shared by the beams of a sentence.

Shapes: B batch (sentences when decoding), G query rows per sentence (beams,
1 outside beam search), T query length, S key length, L cache length, D model
width, H heads, K key depth per head, V value depth per head.

Three modes, each with one return type:
  - full: `layer(query [B, T, D], memory [B, S, D], bias)` -> [B, T, D];
    memory None is self-attention (S = T). `layer.call_with_weights(...)`
    takes the same arguments and returns ([B, T, D], weights [B, H, T, S]).
  - prefill: `cache = layer.project_memory(memory [B, S, D])` once per
    sentence, then `layer.call_cached(query [B * G, T, D], cache, bias)` ->
    ([B * G, T, D], cache): the G query rows of sentence b attend to its cached
    keys and values, which are returned unchanged (encoder-decoder attention
    while decoding: the beams of a sentence share one copy).
  - one step: `cache = layer.empty_cache(B, L, G)`, then for i = 0, 1, ...
    `layer.call_cached(query [B * G, 1, D], cache, bias [B|1, 1, G, G * L],
    cache_index=i)` -> ([B * G, 1, D], cache with slot i of row g holding the
    key and value of query row g). Query row g of a sentence sees all G * L
    slots of its sentence (slot c * L + l: row c's position l); the bias
    chooses which. A beam search that reorders beams need not move the cache:
    it unmasks, for each position, the slot of the row the beam descends
    from (see `masks.beam_step_bias`).
The two decoding modes run `decoding_core`, the full mode `attention_core`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from t2t_keras.layers import counter_hash, initializers
from t2t_keras.layers.dropout import replica_seed
from t2t_keras.layers.masks import MASKED
from t2t_keras.layers.shape_list import shape_list

# {"key": [B, H, S, K], "value": [B, H, S, V]}, or a one-step cache's
# {"key": [B, H, G, L, K], "value": [B, H, G, L, V]}
KeysValues = dict[str, tf.Tensor]


def attention_core(
    query: tf.Tensor,
    key: tf.Tensor,
    value: tf.Tensor,
    bias: tf.Tensor | None,
    dropout_rate: float = 0.0,
    seed: tf.Tensor | None = None,
    return_weights: bool = False,
    heads_first: bool = True,
) -> tuple[tf.Tensor, tf.Tensor | None]:
    """softmax(Q K^T / sqrt(K) + bias) V, the softmax in float32.

    Args:
      query: [B, H, T, K] (heads_first) or [B, T, H, K].
      key: [B, H, S, K] or [B, S, H, K].
      value: [B, H, S, V] or [B, S, H, V].
      bias: float32, broadcastable to [B, H, T, S], or None.
      dropout_rate: dropout on the attention weights (0 when not training).
      seed: [2] int64 seed of the dropout mask.
      return_weights: also return the weights.
      heads_first: the layout of query, key, value and the output. Sequence
        first is what a projection of [B, T, D] gives without a transpose; the
        transposes the products need then happen here, where XLA compiles them.

    Returns:
      ([B, H, T, V] or [B, T, H, V] in the query's dtype, [B, H, T, S] float32
      weights or None).
    """
    layout = "bhtk,bhsk,bhsv,bhtv" if heads_first else "bthk,bshk,bshv,bthv"
    query_layout, key_layout, value_layout, output_layout = layout.split(",")
    scores = tf.einsum(f"{query_layout},{key_layout}->bhts", _scaled(query), key)
    scores = tf.cast(scores, tf.float32)
    if bias is not None:
        scores += _finite(bias)
    weights = tf.nn.softmax(scores, axis=-1)
    dropped = weights
    if dropout_rate > 0.0:
        dropped = counter_hash.dropout(weights, dropout_rate, seed)
    output = tf.einsum(
        f"bhts,{value_layout}->{output_layout}", tf.cast(dropped, value.dtype), value
    )
    return output, (weights if return_weights else None)


def decoding_core(
    query: tf.Tensor, key: tf.Tensor, value: tf.Tensor, bias: tf.Tensor | None
) -> tf.Tensor:
    """`attention_core`'s output for few query rows over many keys (decoding, heads first).

    The scores are computed keys by queries, [B, H, S, T], and the softmax taken
    over the keys' axis: with T the G beams of a sentence and S its G * L cache
    positions, XLA's CPU products run that way about a quarter faster
    (transformer_small_cpu, 5 beams x 91 positions: 3.6 against 4.7 ms a layer).
    The decoding modes' products are MatMuls, not einsums: every process that
    loads a compiled search lowers its graph to XLA again, and TensorFlow lowers
    each Einsum alone through MLIR (about 10 ms, a MatMul about 1, on a 2-core
    EPYC without AVX-512; with the scale below, the slot search's lowering took
    1.15-1.23 s against 1.46-1.69 s).

    Args:
      query: [B, H, T, K]; key: [B, H, S, K]; value: [B, H, S, V].
      bias: float32 [B|1, 1|H, T|1, S], or None.

    Returns:
      [B, H, T, V] in the query's dtype.
    """
    scores = tf.cast(tf.matmul(key, _scaled(query), transpose_b=True), tf.float32)
    if bias is not None:
        scores += tf.transpose(_finite(bias), [0, 1, 3, 2])
    weights = tf.nn.softmax(scores, axis=2)
    return tf.matmul(tf.cast(weights, value.dtype), value, transpose_a=True)


def _scaled(query: tf.Tensor) -> tf.Tensor:
    """The queries divided by the square root of their depth: by a constant when the
    depth is static, as float32 rounds 1 / sqrt(depth) (a graph's Rsqrt would be
    lowered to XLA alone, like an Einsum: see `decoding_core`)."""
    depth = query.shape[-1]
    if depth is None:
        return query * tf.math.rsqrt(tf.cast(tf.shape(query)[-1], query.dtype))
    scale = np.float32(1.0) / np.sqrt(np.float32(depth))
    return query * tf.constant(scale, query.dtype)


def _finite(bias: tf.Tensor) -> tf.Tensor:
    """The bias in float32, no lower than MASKED. Keras may have cast it to float16,
    turning MASKED into -inf; a row with every key masked must stay finite (uniform),
    not NaN."""
    return tf.maximum(tf.cast(bias, tf.float32), MASKED)


# One compiled function serves every call; XLA compiles once per input shape,
# and relaxed tracing keeps eager callers from re-tracing the Python for each.
_compiled_attention_core = tf.function(
    attention_core, jit_compile=True, reduce_retracing=True, autograph=False
)
_compiled_decoding_core = tf.function(
    decoding_core, jit_compile=True, reduce_retracing=True, autograph=False
)

_uncompiled = contextvars.ContextVar("uncompiled_attention", default=False)


@contextlib.contextmanager
def uncompiled_cores() -> Iterator[None]:
    """Within it, every attention core runs uncompiled, whatever its layer's use_xla:
    for a model's building pass, whose outputs are thrown away (XLA would compile a
    core for that one shape, 0.2 s of every process that loads a model)."""
    token = _uncompiled.set(True)
    try:
        yield
    finally:
        _uncompiled.reset(token)


class MultiHeadAttention(keras.layers.Layer):
    """Scaled dot-product attention over `num_heads` heads, with or without biases.

    Args:
      num_heads: H.
      key_depth: K, the query and key depth of one head.
      value_depth: V, the value depth of one head.
      dropout: dropout rate on the attention weights.
      use_xla: run the core as one XLA-compiled function.
      initializer_stddev: 0 for Glorot-uniform kernels, else N(0, this)
        (`t2t_keras.layers.initializers`).
      use_bias: biases on the query and output projections (a pretrained model's,
        e.g. Marian's). A key bias would add the same amount to every key's score
        of a query, which the softmax cancels; a value bias adds itself to every
        head's context, so it is folded into the output bias.
    """

    def __init__(
        self,
        num_heads: int,
        key_depth: int,
        value_depth: int,
        dropout: float = 0.0,
        use_xla: bool = True,
        initializer_stddev: float = 0.0,
        use_bias: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_depth = key_depth
        self.value_depth = value_depth
        self.dropout = dropout
        self.use_xla = use_xla
        self.initializer_stddev = initializer_stddev
        self.use_bias = use_bias
        self.seed_generator = keras.random.SeedGenerator()

    def build(self, query_shape: Any, memory_shape: Any = None) -> None:
        d_model = query_shape[-1]
        memory_width = d_model if memory_shape is None else memory_shape[-1]

        def weight(name: str, shape: tuple[int, ...], fan: tuple[int, int]) -> Any:
            initializer = initializers.projection(self.initializer_stddev, *fan)
            return self.add_weight(name=name, shape=shape, initializer=initializer)

        heads, keys, values = self.num_heads, self.key_depth, self.value_depth
        self.query_kernel = weight("query", (d_model, heads, keys), (d_model, heads * keys))
        self.key_kernel = weight("key", (memory_width, heads, keys), (memory_width, heads * keys))
        self.value_kernel = weight(
            "value", (memory_width, heads, values), (memory_width, heads * values)
        )
        self.output_kernel = weight("output", (heads, values, d_model), (heads * values, d_model))
        self.query_bias = self.output_bias = None
        if self.use_bias:
            self.query_bias = self.add_weight(
                name="query_bias", shape=(heads, keys), initializer="zeros"
            )
            self.output_bias = self.add_weight(
                name="output_bias", shape=(d_model,), initializer="zeros"
            )

    def call(
        self,
        query: tf.Tensor,
        memory: tf.Tensor | None = None,
        bias: tf.Tensor | None = None,
        training: bool = False,
    ) -> tf.Tensor:
        """Full mode: query [B, T, D] attends to memory [B, S, D] (None: itself) -> [B, T, D].

        bias: float32, broadcastable to [B, H, T, S], or None.
        """
        output, _ = self._attend_sequence(query, memory, bias, training, False)
        return output

    def call_with_weights(
        self,
        query: tf.Tensor,
        memory: tf.Tensor | None = None,
        bias: tf.Tensor | None = None,
        training: bool = False,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """`call`, also returning the weights: (output [B, T, D], [B, H, T, S] float32)."""
        output, weights = self._attend_sequence(query, memory, bias, training, True)
        assert weights is not None
        return output, weights

    def call_cached(
        self,
        query: tf.Tensor,
        cache: KeysValues,
        bias: tf.Tensor | None = None,
        cache_index: tf.Tensor | int | None = None,
    ) -> tuple[tf.Tensor, KeysValues]:
        """Prefill or one-step mode (see the module docstring); inference only, no dropout.

        Args:
          query: [B * G, T, D], the G rows of each sentence together; T = 1
            with cache_index.
          cache: prefill {"key": [B, H, S, K], "value": [B, H, S, V]}; one step
            {"key": [B, H, G, L, K], "value": [B, H, G, L, V]}.
          bias: float32, broadcastable to [B, H, G * T, S] (prefill) or
            [B, H, G, G * L] (one step), or None.
          cache_index: None to attend to the cache as it is (prefill); else
            the slot that receives each query row's own key and value first
            (one for all sentences, or [B], each sentence's own).

        Returns:
          (output [B * G, T, D], the cache attended to: updated with cache_index).
        """
        query = self._prepare(query)
        if cache_index is None:
            return self._attend_cached(self._query_heads(query), cache, bias), cache
        # One step: the new query, key and value in one product, as in full mode.
        query_heads, key, value = _project_each(query, self._kernels("query", "key", "value"))
        query_heads, key, value = (
            _heads_first(x) for x in (self._biased_query(query_heads), key, value)
        )  # [B * G, H, T, .]
        cache = _write_step(cache, {"key": key, "value": value}, cache_index)
        keys_values = {name: _merge_rows(tensor) for name, tensor in cache.items()}
        return self._attend_cached(query_heads, keys_values, bias), cache

    def project_memory(self, memory: tf.Tensor) -> KeysValues:
        """Keys and values of `memory` [B, S, D]: {"key": [B, H, S, K], "value": [B, H, S, V]}."""
        memory = self._prepare(memory)
        key, value = _project_each(memory, self._kernels("key", "value"))
        return {"key": _heads_first(key), "value": _heads_first(value)}

    def empty_cache(
        self, batch_size: int | tf.Tensor, length: int | tf.Tensor, rows: int = 1
    ) -> KeysValues:
        """Zeroed one-step cache, `rows` query rows per sentence: [B, H, G, L, K|V]."""
        dtype = self.compute_dtype
        shape = [batch_size, self.num_heads, rows, length]
        return {
            "key": tf.zeros([*shape, self.key_depth], dtype),
            "value": tf.zeros([*shape, self.value_depth], dtype),
        }

    def _attend_sequence(
        self,
        query: tf.Tensor,
        memory: tf.Tensor | None,
        bias: tf.Tensor | None,
        training: bool,
        return_weights: bool,
    ) -> tuple[tf.Tensor, tf.Tensor | None]:
        """Full mode: plain matrix products into [B, T|S, H, K|V], no transposes outside the core.

        Self-attention projects Q, K and V in one product, and memory attention K
        and V in one: a [D, 3 * H * K] kernel keeps a CPU's matrix units busier
        than three of [D, H * K] (training 3-5% faster on 2 cores).
        """
        query = self._prepare(query)
        if memory is None:
            query, key, value = _project_each(query, self._kernels("query", "key", "value"))
        else:
            query = _project(query, self._read(self.query_kernel))
            key, value = _project_each(self._prepare(memory), self._kernels("key", "value"))
        query = self._biased_query(query)
        rate = self.dropout if training else 0.0
        seed = replica_seed(self.seed_generator) if rate > 0.0 else None
        context, weights = self._core(
            query, key, value, bias, rate, seed, return_weights, heads_first=False
        )
        return self._output(context), weights

    def _query_heads(self, query: tf.Tensor) -> tf.Tensor:
        """[B, T, D] -> the queries [B, H, T, K]."""
        return _heads_first(self._biased_query(_project(query, self._read(self.query_kernel))))

    def _biased_query(self, query: tf.Tensor) -> tf.Tensor:
        """The projected queries [B, T, H, K] plus their bias, if any (before the scaling)."""
        return query if self.query_bias is None else query + self._read(self.query_bias)

    def _kernels(self, *names: str) -> list[tf.Tensor]:
        """The named kernels [D, H, K|V], read in the compute dtype."""
        return [self._read(getattr(self, f"{name}_kernel")) for name in names]

    def _attend_cached(
        self, heads: tf.Tensor, keys_values: KeysValues, bias: tf.Tensor | None
    ) -> tf.Tensor:
        """Queries heads [B * G, H, T, K] attend to keys_values [B, H, S, K|V] -> [B * G, T, D].

        G, the query's rows per row of the keys, is 1 outside beam search.
        """
        groups = shape_list(heads)[0] // shape_list(keys_values["key"])[0]
        core = _compiled_decoding_core if self._compiles_cores() else decoding_core
        context = core(_group_rows(heads, groups), keys_values["key"], keys_values["value"], bias)
        return self._output(tf.transpose(_ungroup_rows(context, groups), [0, 2, 1, 3]))

    def _output(self, context: tf.Tensor) -> tf.Tensor:
        """The heads' context [B, T, H, V] -> [B, T, D], as one [B * T, H * V] product."""
        output_kernel = self._read(self.output_kernel)  # [H, V, D]
        flat_kernel = tf.reshape(output_kernel, [-1, shape_list(output_kernel)[-1]])
        output = _project(_merge_heads(context), flat_kernel)
        return output if self.output_bias is None else output + self._read(self.output_bias)

    @property
    def _core(self) -> Any:
        """The attention core: one XLA-compiled function with use_xla (see `uncompiled_cores`)."""
        return _compiled_attention_core if self._compiles_cores() else attention_core

    def _compiles_cores(self) -> bool:
        """Whether the cores run XLA-compiled: with use_xla, outside `uncompiled_cores`."""
        return self.use_xla and not _uncompiled.get()

    def _prepare(self, x: tf.Tensor) -> tf.Tensor:
        """What `__call__` does for `call`: build on first use, cast to the compute dtype."""
        if not self.built:
            self.build(x.shape)
        return tf.cast(x, self.compute_dtype)

    def _read(self, variable: Any) -> tf.Tensor:
        return tf.cast(variable, self.compute_dtype)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_depth": self.key_depth,
            "value_depth": self.value_depth,
            "dropout": self.dropout,
            "initializer_stddev": self.initializer_stddev,
            "use_bias": self.use_bias,
        }


def slot_indices(
    batch: int | tf.Tensor, heads: int | tf.Tensor, rows: int | tf.Tensor, index: tf.Tensor | int
) -> tf.Tensor:
    """[B, H, G, 4]: slot `index` of every row of a one-step cache [B, H, G, L, .], the
    indices of a scatter there; index one position for all sentences, or [B]."""
    grid = tf.meshgrid(tf.range(batch), tf.range(heads), tf.range(rows), indexing="ij")
    own_index = tf.reshape(tf.cast(index, tf.int32), [-1, 1, 1])  # [B|1, 1, 1]
    return tf.stack([*grid, tf.broadcast_to(own_index, tf.shape(grid[0]))], axis=-1)


def _write_step(cache: KeysValues, step: KeysValues, index: tf.Tensor | int) -> KeysValues:
    """Writes each row's key and value [B * G, H, 1, K|V] into slot `index` of [B, H, G, L, K|V].

    index: one position for all sentences, or [B], each sentence's own.

    A scatter of B * H * G vectors, which XLA performs in place inside the
    decoding loop: a step costs the same at every position.
    """
    batch, heads, rows = shape_list(cache["key"])[:3]
    indices = slot_indices(batch, heads, rows, index)
    written = {}
    for name in ("key", "value"):
        update = tf.reshape(
            step[name], [batch, rows, heads, shape_list(step[name])[-1]]
        )  # [B, G, H, K|V]
        update = tf.transpose(update, [0, 2, 1, 3])
        written[name] = tf.tensor_scatter_nd_update(cache[name], indices, update)
    return written


def _project(x: tf.Tensor, kernel: tf.Tensor) -> tf.Tensor:
    """[B, T, D] x [D, ...] -> [B, T, ...] as one [B * T, D] x [D, prod(...)] product."""
    x_shape, kernel_shape = shape_list(x), shape_list(kernel)
    flat = tf.matmul(tf.reshape(x, [-1, x_shape[-1]]), tf.reshape(kernel, [kernel_shape[0], -1]))
    return tf.reshape(flat, [*x_shape[:-1], *kernel_shape[1:]])


def _project_each(x: tf.Tensor, kernels: list[tf.Tensor]) -> list[tf.Tensor]:
    """[B, T, D] x each [D, H, K] -> each [B, T, H, K], as one product with the kernels side by side."""
    shapes = [shape_list(kernel) for kernel in kernels]
    flat = [
        tf.reshape(kernel, [shape[0], -1]) for kernel, shape in zip(kernels, shapes, strict=True)
    ]
    widths = [shape[1] * shape[2] for shape in shapes]
    projected = tf.split(_project(x, tf.concat(flat, axis=1)), widths, axis=-1)
    leading = shape_list(x)[:-1]
    return [
        tf.reshape(y, [*leading, *shape[1:]]) for y, shape in zip(projected, shapes, strict=True)
    ]


def _heads_first(x: tf.Tensor) -> tf.Tensor:
    """[B, T, H, K] -> [B, H, T, K]."""
    return tf.transpose(x, [0, 2, 1, 3])


def _merge_heads(x: tf.Tensor) -> tf.Tensor:
    """[..., H, K] -> [..., H * K]."""
    shape = shape_list(x)
    return tf.reshape(x, [*shape[:-2], shape[-2] * shape[-1]])


def _merge_rows(cache: tf.Tensor) -> tf.Tensor:
    """[B, H, G, L, K] -> [B, H, G * L, K]: a sentence's slots as one key sequence."""
    shape = shape_list(cache)
    return tf.reshape(cache, [shape[0], shape[1], shape[2] * shape[3], shape[4]])


def _group_rows(heads: tf.Tensor, groups: int | tf.Tensor) -> tf.Tensor:
    """[B * G, H, T, K] -> [B, H, G * T, K]: a sentence's query rows together."""
    shape = shape_list(heads)
    grouped = tf.reshape(heads, [shape[0] // groups, groups, shape[1], shape[2], shape[3]])
    grouped = tf.transpose(grouped, [0, 2, 1, 3, 4])
    return tf.reshape(grouped, [shape[0] // groups, shape[1], groups * shape[2], shape[3]])


def _ungroup_rows(context: tf.Tensor, groups: int | tf.Tensor) -> tf.Tensor:
    """[B, H, G * T, V] -> [B * G, H, T, V], undoing `_group_rows`."""
    shape = shape_list(context)
    split = tf.reshape(context, [shape[0], shape[1], groups, shape[2] // groups, shape[3]])
    split = tf.transpose(split, [0, 2, 1, 3, 4])
    return tf.reshape(split, [shape[0] * groups, shape[1], shape[2] // groups, shape[3]])
