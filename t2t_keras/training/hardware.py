"""What the loaded TensorFlow runs on: whether oneDNN is on, and the precision auto picks."""

from __future__ import annotations

import os
from collections.abc import Mapping

import tensorflow as tf

from t2t_keras import machine
from t2t_keras.modes import PRECISION_AUTO

# The first GPUs with native bfloat16 matrix products (Ampere).
_GPU_BFLOAT16_CAPABILITY = (8, 0)


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
    return ("bf16", f"auto: bf16, {why}") if native else ("off", f"auto: float32, {why}")
