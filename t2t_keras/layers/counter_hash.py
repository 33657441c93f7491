"""Random bits as a hash of a counter: no random state, and cheap under XLA.

Murmur3's 32-bit finalizer, chained over a seed's words and an element's
index, gives each element of a tensor 32 bits that look independent: a
different seed or index gives an unrelated number, on any device, compiled
by XLA or not. Under XLA the hash fuses into the ops that consume it (a few
integer multiplies and shifts per element), where XLA's CPU lowering of
TensorFlow's counter-based generators runs many times slower: attention
dropout drawn with `tf.nn.experimental.stateless_dropout` inside the compiled
attention core cost a third of a small model's training throughput.

Sampling (`search/sampling.py`) draws its uniform numbers from the same hash;
`dropout` here is the compiled attention core's weight dropout.
"""

from __future__ import annotations

import tensorflow as tf

# The golden ratio's 32 bits, which keep a zero input from hashing to zero.
GOLDEN = 0x9E3779B9


def finalize(bits: tf.Tensor) -> tf.Tensor:
    """Murmur3's 32-bit finalizer: every input bit flips each output bit half the time."""
    for shift, multiplier in ((16, 0x85EBCA6B), (13, 0xC2B2AE35)):
        bits = bits ^ tf.bitwise.right_shift(bits, tf.constant(shift, tf.uint32))
        bits = bits * tf.constant(multiplier, tf.uint32)
    return bits ^ tf.bitwise.right_shift(bits, tf.constant(16, tf.uint32))


def mix(key: tf.Tensor, value: tf.Tensor) -> tf.Tensor:
    """The key [uint32] after absorbing value (uint32, broadcast against it)."""
    return finalize(key ^ finalize(value + tf.constant(GOLDEN, tf.uint32)))


def seed_key(seed: tf.Tensor) -> tf.Tensor:
    """A scalar uint32 key from a [2] integer seed (all 64 bits of each word count)."""
    words = tf.reshape(tf.bitcast(tf.cast(seed, tf.int64), tf.uint32), [-1])
    key = finalize(tf.constant(GOLDEN, tf.uint32))
    for index in range(4):
        key = mix(key, words[index])
    return key


def dropout(x: tf.Tensor, rate: float, seed: tf.Tensor) -> tf.Tensor:
    """Inverted dropout of x with a [2] integer seed: kept elements scaled by 1 / (1 - rate).

    An element is dropped when its 32 hash bits fall below rate * 2^32, so the
    rate is exact to 2^-32; the mask depends only on the seed, x's shape and
    the element's position.
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    index = tf.bitcast(tf.reshape(tf.range(tf.size(x)), tf.shape(x)), tf.uint32)
    bits = mix(seed_key(seed), index)
    keep = bits >= tf.constant(round(rate * 2**32), tf.uint32)
    return tf.where(keep, x * tf.cast(1.0 / (1.0 - rate), x.dtype), tf.zeros([], x.dtype))
