"""What the loaded TensorFlow runs on: whether oneDNN is on, and the precision auto picks."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

import tensorflow as tf

from t2t_keras import machine
from t2t_keras.modes import PRECISION_AUTO

# The first GPUs with native bfloat16 matrix products (Ampere).
_GPU_BFLOAT16_CAPABILITY = (8, 0)
# auto takes bfloat16 on a CPU only where its products run this much faster than float32's:
# some CPUs with AVX512_BF16 run them at half the float32 rate, others at twice.
_BFLOAT16_MIN_SPEEDUP = 1.2
_PROBE_SIZE = 1024


def onednn_enabled() -> bool:
    """Whether TensorFlow's oneDNN kernels are on in this process (decided as it loaded)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # A TensorFlow without it has no oneDNN kernels to turn on.
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def resolve_mixed_precision(
    requested: str,
    cpu: machine.Cpu | None = None,
    environ: Mapping[str, str] = os.environ,
) -> tuple[str, str]:
    """(--mixed_precision to use, why): `requested` itself, or for "auto" what runs natively.

    auto: bfloat16 on a GPU of compute capability 8.0 or more, or on a CPU
    with AVX512_BF16 or AMX reached through oneDNN (`machine.native_bfloat16`);
    float32 elsewhere.
    """
    if requested != PRECISION_AUTO:
        return requested, f"--mixed_precision={requested} as asked"
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        details = tf.config.experimental.get_device_details(gpus[0])
        capability = details.get("compute_capability") or (0, 0)
        if tuple(capability) >= _GPU_BFLOAT16_CAPABILITY:
            return "bf16", f"auto: bf16, the GPU (compute capability {capability}) runs it natively"
        return "off", f"auto: float32, the GPU (compute capability {capability}) lacks bfloat16"
    cpu = machine.read_cpu() if cpu is None else cpu
    native, why = machine.native_bfloat16(cpu, onednn_enabled(), environ)
    if not native:
        return "off", f"auto: float32, {why}"
    bfloat16, float32 = matmul_rate(tf.bfloat16), matmul_rate(tf.float32)
    rates = f"{bfloat16 / 1e9:.0f} against {float32 / 1e9:.0f} GFLOP/s in float32"
    if bfloat16 < _BFLOAT16_MIN_SPEEDUP * float32:
        return "off", f"auto: float32, {why} but its products ran no faster ({rates})"
    return "bf16", f"auto: bf16, {why} and its products ran faster ({rates})"


def matmul_product(dtype: tf.DType, size: int) -> Callable[[], float]:
    """A compiled [size, size] x [size, size] product in dtype; a call returns one element."""
    a = tf.random.stateless_normal([size, size], seed=[1, 2], dtype=tf.float32)
    b = tf.random.stateless_normal([size, size], seed=[3, 4], dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    product = tf.function(lambda: tf.reduce_sum(tf.cast(tf.matmul(a, b)[:1, :1], tf.float32)))
    return lambda: float(product())


def matmul_rate(dtype: tf.DType, size: int = _PROBE_SIZE, calls: int = 3) -> float:
    """FLOP/s of the fastest of `calls` products (after one untimed): a quick probe."""
    product = matmul_product(dtype, size)
    product()
    fastest = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        product()
        fastest = min(fastest, time.perf_counter() - start)
    return 2.0 * size**3 / fastest
