"""--mixed_precision=auto on CPUs faked both ways, and the oneDNN state TensorFlow reports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from t2t_keras.machine import Cpu
from t2t_keras.training import hardware

BFLOAT16_CPU = Cpu(
    "AMD EPYC 9R14", frozenset({"avx2", "fma", "avx512f", "avx512_bf16"}), "x86_64", "Linux"
)
AVX2_CPU = Cpu("AMD EPYC 7B13", frozenset({"avx2", "fma"}), "x86_64", "Linux")


@pytest.mark.parametrize(
    ("cpu", "onednn_on", "expected", "why"),
    [
        (BFLOAT16_CPU, True, "bf16", "natively (AVX512_BF16)"),
        (BFLOAT16_CPU, False, "off", "oneDNN kernels are off"),
        (AVX2_CPU, True, "off", "neither AVX512_BF16 nor AMX"),
    ],
)
def test_auto_picks_bfloat16_only_where_the_cpu_runs_it_natively(
    monkeypatch: pytest.MonkeyPatch, cpu: Cpu, onednn_on: bool, expected: str, why: str
) -> None:
    monkeypatch.setattr(hardware, "onednn_enabled", lambda: onednn_on)
    precision, reason = hardware.resolve_mixed_precision("auto", cpu, environ={})
    assert precision == expected and why in reason and reason.startswith("auto: ")


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
