"""A tensor's shape as graph code wants it: static dimensions as ints, others as tensors."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def shape_list(tensor: tf.Tensor) -> list[Any]:
    """The shape, each dimension an int where it is static, else a scalar tensor.

    A reshape or fill built from it keeps every static dimension static in a
    traced graph. A fully static shape makes no `tf.shape` op (which a graph
    would hold unused).
    """
    if tensor.shape.is_fully_defined():
        return tensor.shape.as_list()
    dynamic = tf.shape(tensor)
    return [dim if dim is not None else dynamic[i] for i, dim in enumerate(tensor.shape)]
