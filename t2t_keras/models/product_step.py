"""The decoding step with its dense products run by TensorFlow's kernels, in bfloat16.

XLA's CPU backend runs bfloat16 matrix products at the float32 rate; oneDNN,
behind TensorFlow's own MatMul, runs them 2-4x faster on a CPU with AMX or
AVX512_BF16. `ProductDecoding` gives the searches (`search.decoder`) the
methods `IncrementalDecoding` does, but its step is no longer one compiled
function: every dense product (the attention projections, the feed-forward
layers, the logits) is a MatMul of bfloat16 inputs and weights, and the work
between two products is one small XLA-compiled segment: per decoder layer six
segments and six products.

What is cast: each product's weights, once per search, before its loop (the
checkpoint's stay float32), and each product's input. Everything else stays
float32: the residual stream, the layer norms, the attention scores, softmax
and weighted sums, the self-attention caches, the logits (the products'
results are cast back), and so the search's log-probabilities, scores and
length penalties. With `dtype=tf.float32` the same structure runs float32
products, the outputs of the compiled step up to rounding (the tests' check).

The self-attention caches live in resource variables, not in the loop's state:
a cache passed into a compiled segment and out again would be copied whole at
every step (a compiled function's outputs are new buffers), where TensorFlow's
scatter writes a variable in place and a segment reads it without a copy.
Hence one `ProductDecoding` serves one search at a time.

Shapes as in `models.decoding`: B sentences, K beams (rows) per sentence, R =
B * K rows, S input width, L output positions, D model width, H heads.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_keras.layers import attention
from t2t_keras.layers.masks import beam_step_bias
from t2t_keras.layers.shape_list import shape_list
from t2t_keras.models.decoding import (
    DecodingMemory,
    DecodingState,
    StepFunction,
    first_slots,
    follow_parents,
)

_ROWS, _FIRST = "rows", "first"  # The searched rows' caches; the one-row first position's.


def _segment(function: Any) -> Any:
    return tf.function(function, jit_compile=True, reduce_retracing=True, autograph=False)


def _layer_norm(x: tf.Tensor, norm: tuple[tf.Tensor, tf.Tensor, float]) -> tf.Tensor:
    """Keras' LayerNormalization of float32 x [R, D], norm (gamma, beta, epsilon)."""
    gamma, beta, epsilon = norm
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    inverse = tf.math.rsqrt(variance + epsilon) * gamma
    return x * inverse + (beta - mean * inverse)


def _norm(norm: Any) -> tuple[tf.Tensor, tf.Tensor, float]:
    """A Keras LayerNormalization's (gamma, beta, epsilon), read once."""
    return tf.convert_to_tensor(norm.gamma), tf.convert_to_tensor(norm.beta), norm.epsilon


def _cache() -> tf.Variable:
    """A self-attention cache's variable, of any shape: each search assigns its own."""
    return tf.Variable(tf.zeros([0], tf.float32), shape=tf.TensorShape(None), trainable=False)


def _read(variable: Any) -> tf.Tensor | None:
    return None if variable is None else tf.convert_to_tensor(variable)


class ProductDecoding:
    """`model`'s incremental decoding with its products in `dtype` (see the module).

    Args:
      model: a built Transformer without leaf inputs (a parser's search keeps
        the compiled step).
      dtype: the products' inputs and weights: tf.bfloat16, or tf.float32.
    """

    def __init__(self, model: Any, dtype: tf.DType = tf.bfloat16) -> None:
        if model.word_starts is not None or model.leaf_word_projection is not None:
            raise ValueError("ProductDecoding does not decode models with leaf inputs (parsers).")
        self.model = model
        self.dtype = dtype
        self.hparams = model.hparams
        self.caches = {
            which: [{"key": _cache(), "value": _cache()} for _ in model.decoder_layers]
            for which in (_ROWS, _FIRST)
        }
        self._split_qkv = _segment(self._split_qkv_fn)
        self._attend_self = _segment(self._attend_self_fn)
        self._attend_memory = _segment(self._attend_memory_fn)
        self._residual = _segment(self._residual_fn)
        self._start_step = _segment(self._start_step_fn)
        self._encode = _segment(model.encode_for_decoding)
        self._activation = model.decoder_layers[0].feed_forward.inner.activation

    # What the searches call (`IncrementalDecoding`'s methods).

    def start_decoding(
        self, inputs: tf.Tensor, cache_length: int | tf.Tensor, beam_size: int = 1
    ) -> tuple[DecodingState, StepFunction]:
        memory = self.encode_for_decoding(inputs, beam_size)
        batch = shape_list(memory["bias"])[0]
        state = self.empty_decoding_state(batch, cache_length, beam_size)
        return state, self.decoding_step(memory, cache_length, beam_size)

    def encode_for_decoding(self, inputs: tf.Tensor, beam_size: int = 1) -> DecodingMemory:
        """The model's memory (its encoder compiled whole, in float32), with the
        products' weights in `dtype` under "products", cast once here."""
        memory = dict(self._encode(inputs, beam_size))
        memory["products"] = self._product_weights()
        return memory

    def empty_decoding_state(
        self, batch: tf.Tensor | int, cache_length: int | tf.Tensor, beam_size: int
    ) -> DecodingState:
        self._empty_caches(_ROWS, batch, cache_length, beam_size)
        return self.model.fresh_decoding_rows(batch, cache_length, beam_size)

    def start_one_row(
        self, memory: DecodingMemory, beam_size: int
    ) -> tuple[DecodingState, StepFunction]:
        batch = shape_list(memory["bias"])[0]
        self._empty_caches(_FIRST, batch, 1, 1)
        state = self.model.fresh_decoding_rows(batch, 1, 1)
        return state, self.decoding_step(memory, 1, 1, _FIRST)

    def first_positions(
        self, state: DecodingState, first: DecodingState, taken: tf.Tensor, source: tf.Tensor
    ) -> DecodingState:
        """As `IncrementalDecoding.first_positions`, from the one-row caches' slot 0."""
        for rows, one_row in zip(self.caches[_ROWS], self.caches[_FIRST], strict=True):
            for name in ("key", "value"):
                cache, first_cache = (
                    tf.ensure_shape(tf.convert_to_tensor(c[name]), [None] * 5)
                    for c in (rows, one_row)
                )
                rows[name].scatter_nd_update(*first_slots(cache, first_cache, taken, source))
        return dict(state)

    def decoding_step(
        self,
        memory: DecodingMemory,
        cache_length: int | tf.Tensor,
        beam_size: int = 1,
        which: str = _ROWS,
    ) -> StepFunction:
        """`IncrementalDecoding.decoding_step`'s step, its products in `dtype`."""
        weights, caches = memory["products"], self.caches[which]
        own_row = tf.range(beam_size)[tf.newaxis, :, tf.newaxis]

        def step(
            state: DecodingState, index: tf.Tensor, ids: tf.Tensor, parents: tf.Tensor | None
        ) -> tuple[tf.Tensor, DecodingState]:
            ancestors, self_bias, slots, x, h = self._start_step(
                state["ancestors"],
                parents,
                index,
                ids,
                own_row,
                cache_length,
                weights["first_norm"],
            )
            for layer_weights, layer_memory, cache in zip(
                weights["layers"], memory["layers"], caches, strict=True
            ):
                x, h = self._layer_step(
                    layer_weights, cache, layer_memory, memory["bias"], self_bias, slots, x, h
                )
            logits = tf.cast(tf.matmul(h, weights["logits"], transpose_b=True), tf.float32)
            if weights["logits_bias"] is not None:
                logits += weights["logits_bias"]
            return logits, {"ancestors": ancestors}

        return step

    # The step's parts.

    def _layer_step(
        self,
        weights: dict[str, Any],
        cache: dict[str, tf.Variable],
        memory: dict[str, tf.Tensor],
        memory_bias: tf.Tensor,
        self_bias: tf.Tensor,
        slots: tf.Tensor,
        x: tf.Tensor,
        h: tf.Tensor,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """One decoder layer: x [R, D] float32 its input, h [R, D] its first sub-layer's,
        in `dtype` -> (the layer's output, the next sub-layer's input)."""
        query, key, value = self._split_qkv(
            tf.matmul(h, weights["qkv"]), weights["self_query_bias"], slots
        )
        cache["key"].scatter_nd_update(slots, key)
        cache["value"].scatter_nd_update(slots, value)
        context = self._attend_self(query, cache["key"], cache["value"], self_bias)
        output = tf.matmul(context, weights["self_output"])
        x, h = self._residual(x, output, *weights["after_self"])
        context = self._attend_memory(
            tf.matmul(h, weights["memory_query"]),
            weights["memory_query_bias"],
            memory["key"],
            memory["value"],
            memory_bias,
        )
        output = tf.matmul(context, weights["memory_output"])
        x, h = self._residual(x, output, *weights["after_memory"])
        inner = tf.nn.bias_add(tf.matmul(h, weights["inner"]), weights["inner_bias"])
        output = tf.matmul(tf.cast(self._activation(inner), self.dtype), weights["outer"])
        return self._residual(x, output, *weights["after_feed_forward"])

    def _start_step_fn(
        self,
        ancestors: tf.Tensor,
        parents: tf.Tensor | None,
        index: tf.Tensor,
        ids: tf.Tensor,
        own_row: tf.Tensor,
        cache_length: int | tf.Tensor,
        first_norm: Any,
    ) -> tuple[tf.Tensor, ...]:
        """(ancestors, the self-attention bias, the cache slots [B, H, K, 4] each row
        writes, the embedded ids x [R, D], the first sub-layer's input h)."""
        batch, beams = shape_list(ancestors)[:2]
        index = tf.broadcast_to(tf.cast(index, tf.int32), [batch])
        ancestors = follow_parents(ancestors, parents, index, own_row, cache_length)
        row_index = tf.repeat(index, beams)[:, tf.newaxis]
        model = self.model
        x = model._embed(model.target_embedding, ids[:, tf.newaxis], 1, row_index, False)[:, 0]
        heads = model.decoder_layers[0].self_attention.num_heads
        slots = attention.slot_indices(batch, heads, beams, index)
        h = x if first_norm is None else _layer_norm(x, first_norm)
        return ancestors, beam_step_bias(ancestors, index), slots, x, tf.cast(h, self.dtype)

    def _split_qkv_fn(
        self, qkv: tf.Tensor, query_bias: tf.Tensor | None, slots: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """[R, H * (2Kd + V)] projections, side by side as `attention._project_each`
        makes them -> (the queries [B, H, K, Kd], a sentence's rows together as
        `attention._group_rows` puts them; the keys and values [B, H, K, Kd|V]
        each row writes at its slot)."""
        batch, heads, beams = shape_list(slots)[:3]
        qkv = tf.cast(qkv, tf.float32)
        query, key, value = (
            tf.reshape(part, [batch, beams, heads, -1])
            for part in tf.split(qkv, self._qkv_widths(qkv.shape[-1], heads), axis=-1)
        )
        if query_bias is not None:
            query += query_bias
        return tuple(tf.transpose(part, [0, 2, 1, 3]) for part in (query, key, value))

    def _qkv_widths(self, width: int, heads: int) -> list[int]:
        attention_layer = self.model.decoder_layers[0].self_attention
        keys = heads * attention_layer.key_depth
        return [keys, keys, width - 2 * keys]

    def _attend_self_fn(
        self, query: tf.Tensor, keys: Any, values: Any, bias: tf.Tensor
    ) -> tf.Tensor:
        """Queries [B, H, K, Kd] over the cache variables [B, H, K, L, Kd|V] -> the
        context [R, H * V] in `dtype`."""
        key, value = (
            attention._merge_rows(tf.ensure_shape(tf.convert_to_tensor(cache), [None] * 5))
            for cache in (keys, values)
        )
        return self._context(attention.decoding_core(query, key, value, bias))

    def _attend_memory_fn(
        self,
        query: tf.Tensor,
        query_bias: tf.Tensor | None,
        keys: tf.Tensor,
        values: tf.Tensor,
        bias: tf.Tensor,
    ) -> tf.Tensor:
        """Projected queries [R, H * Kd] over the encoder's keys and values [B, H, S,
        Kd|V] -> the context [R, H * V] in `dtype`."""
        batch, heads = shape_list(keys)[:2]
        query = tf.reshape(tf.cast(query, tf.float32), [batch, -1, heads, keys.shape[-1]])
        if query_bias is not None:
            query += query_bias
        query = tf.transpose(query, [0, 2, 1, 3])
        return self._context(attention.decoding_core(query, keys, values, bias))

    def _context(self, context: tf.Tensor) -> tf.Tensor:
        """[B, H, K, V] -> [R, H * V] in `dtype`, the output projection's input."""
        batch, heads, beams, depth = shape_list(context)
        context = tf.transpose(context, [0, 2, 1, 3])
        return tf.cast(tf.reshape(context, [batch * beams, heads * depth]), self.dtype)

    def _residual_fn(
        self, x: tf.Tensor, output: tf.Tensor, bias: Any, post: Any, following: Any
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """x + output (+ bias), normalized by `post`; and the next sub-layer's input,
        normalized by `following` (its pre-norm), in `dtype`."""
        x = x + tf.cast(output, tf.float32)
        if bias is not None:
            x += bias
        if post is not None:
            x = _layer_norm(x, post)
        h = x if following is None else _layer_norm(x, following)
        return x, tf.cast(h, self.dtype)

    def _empty_caches(
        self, which: str, batch: int | tf.Tensor, length: int | tf.Tensor, beams: int
    ) -> None:
        for layer, cache in zip(self.model.decoder_layers, self.caches[which], strict=True):
            shape = [batch, layer.self_attention.num_heads, beams, length]
            cache["key"].assign(tf.zeros([*shape, layer.self_attention.key_depth]))
            cache["value"].assign(tf.zeros([*shape, layer.self_attention.value_depth]))

    def _product_weights(self) -> dict[str, Any]:
        """What the step reads of the weights, read once a search: the products'
        weights in `dtype` ([inputs, outputs]; the logits' [V, D]), each block's
        output bias and norms in float32 (`_residual`'s arguments)."""
        layers = self.model.decoder_layers
        weights = [self._layer_weights(layer) for layer in layers]
        final = self.model.final_norms
        for i, (layer, layer_weights) in enumerate(zip(layers, weights, strict=True)):
            if i + 1 < len(layers):
                following = _pre_norm(layers[i + 1].attention_block)
            else:
                following = _norm(final[1]) if final else None
            blocks = (layer.attention_block, layer.memory_block, layer.feed_forward_block)
            biases = (
                layer.self_attention.output_bias,
                layer.memory_attention.output_bias,
                layer.feed_forward.outer.bias,
            )
            nexts = (_pre_norm(blocks[1]), _pre_norm(blocks[2]), following)
            names = ("after_self", "after_memory", "after_feed_forward")
            for name, block, bias, after in zip(names, blocks, biases, nexts, strict=True):
                post = _norm(block.norm) if block.position == "post" else None
                layer_weights[name] = (_read(bias), post, after)
        return {
            "layers": weights,
            "logits": tf.cast(self.model.softmax_weights.embeddings, self.dtype),
            "logits_bias": _read(self.model.logits_bias),
            "first_norm": _pre_norm(layers[0].attention_block),
        }

    def _layer_weights(self, layer: Any) -> dict[str, Any]:
        own, other, feed_forward = layer.self_attention, layer.memory_attention, layer.feed_forward
        d_model = own.query_kernel.shape[0]

        def inputs_first(kernel: Any) -> tf.Tensor:  # [D, H, K] -> [D, H * K]
            return tf.reshape(tf.convert_to_tensor(kernel), [d_model, -1])

        def outputs_last(kernel: Any) -> tf.Tensor:  # [H, V, D] -> [H * V, D]
            return tf.reshape(tf.convert_to_tensor(kernel), [-1, d_model])

        qkv = [inputs_first(getattr(own, f"{n}_kernel")) for n in ("query", "key", "value")]
        products = {
            "qkv": tf.concat(qkv, axis=1),
            "self_output": outputs_last(own.output_kernel),
            "memory_query": inputs_first(other.query_kernel),
            "memory_output": outputs_last(other.output_kernel),
            "inner": tf.convert_to_tensor(feed_forward.inner.kernel),
            "inner_bias": tf.convert_to_tensor(feed_forward.inner.bias),
            "outer": tf.convert_to_tensor(feed_forward.outer.kernel),
        }
        weights: dict[str, Any] = {k: tf.cast(v, self.dtype) for k, v in products.items()}
        weights["self_query_bias"] = _read(own.query_bias)
        weights["memory_query_bias"] = _read(other.query_bias)
        return weights


def _pre_norm(block: Any) -> tuple[tf.Tensor, tf.Tensor, float] | None:
    """A residual block's norm if it normalizes its sub-layer's input, else None."""
    return _norm(block.norm) if block.position == "pre" else None
