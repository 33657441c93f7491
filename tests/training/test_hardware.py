"""--mixed_precision=auto on CPUs faked both ways, and the oneDNN state TensorFlow reports."""

from __future__ import annotations

import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_keras.machine import Cpu
from t2t_keras.training import hardware

BFLOAT16_CPU = Cpu(
    "AMD EPYC 9R14", frozenset({"avx2", "fma", "avx512f", "avx512_bf16"}), "x86_64", "Linux"
)
AVX2_CPU = Cpu("AMD EPYC 7B13", frozenset({"avx2", "fma"}), "x86_64", "Linux")


@pytest.mark.parametrize(
    ("cpu", "onednn_on", "bfloat16_speedup", "expected", "why"),
    [
        (BFLOAT16_CPU, True, 2.0, "bf16", "natively (AVX512_BF16) and its products ran faster"),
        (BFLOAT16_CPU, True, 0.5, "off", "but its products ran no faster (50 against 100"),
        (BFLOAT16_CPU, False, 2.0, "off", "oneDNN kernels are off"),
        (AVX2_CPU, True, 2.0, "off", "neither AVX512_BF16 nor AMX"),
    ],
)
def test_auto_picks_bfloat16_only_where_the_cpu_runs_it_natively_and_faster(
    monkeypatch: pytest.MonkeyPatch,
    cpu: Cpu,
    onednn_on: bool,
    bfloat16_speedup: float,
    expected: str,
    why: str,
) -> None:
    rates = {tf.float32: 100e9, tf.bfloat16: bfloat16_speedup * 100e9}
    monkeypatch.setattr(hardware, "onednn_enabled", lambda: onednn_on)
    monkeypatch.setattr(hardware, "matmul_rate", lambda dtype: rates[dtype])
    precision, reason = hardware.resolve_mixed_precision("auto", cpu, environ={})
    assert precision == expected and why in reason and reason.startswith("auto: ")


def test_the_matmul_probe_measures_a_rate() -> None:
    assert 1e8 < hardware.matmul_rate(tf.float32, size=128, calls=2) < 1e14


@pytest.mark.parametrize("requested", ["off", "fp16", "bf16"])
def test_an_explicit_precision_is_kept_on_any_cpu(requested: str) -> None:
    for cpu in (BFLOAT16_CPU, AVX2_CPU):
        assert hardware.resolve_mixed_precision(requested, cpu, environ={})[0] == requested


@pytest.mark.parametrize("value", ["0", "1"])
def test_onednn_enabled_reports_what_tensorflow_decided(value: str) -> None:
    # A process of its own: TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, as it loads.
    code = "from t2t_keras.training.hardware import onednn_enabled; print(onednn_enabled())"
    env = {"TF_ENABLE_ONEDNN_OPTS": value, "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == str(value == "1")
