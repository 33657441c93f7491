"""The machine a figure was measured on, for every benchmark's JSON line.

Machines differ several-fold: a figure names the CPU model, the features
that decide its speed (AVX2, FMA, AVX-512, AVX512_VNNI, AVX512_BF16, AMX),
whether TensorFlow's oneDNN kernels were on, and the float32 matrix-product
rate measured on it (`t2t-benchmark --mode=matmul`), which also scales
reference budgets (`t2t_keras.benchmark.budget`).
"""

from __future__ import annotations

from t2t_keras import machine
from t2t_keras.training.hardware import onednn_enabled


def describe(matmul_fp32_flops_per_s: float, cpu: machine.Cpu | None = None) -> dict:
    """The fields naming this machine, given its measured float32 matmul rate."""
    cpu = machine.read_cpu() if cpu is None else cpu
    return {
        "cpu": cpu.model or "unknown",
        "cores": machine.usable_cores(),
        "cpu_flags": cpu.isa_flags,
        "onednn": onednn_enabled(),
        "matmul_fp32_flops_per_s": matmul_fp32_flops_per_s,
    }
