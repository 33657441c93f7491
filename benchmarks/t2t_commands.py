"""The installed t2t-* commands, run as a user runs them, each a process of its own.

Under `avx2_host.py` each runs with YNNPACK capped at AVX2 too (`t2t`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import avx2_host


def t2t(name: str) -> list[str]:
    """The argv that starts the t2t-* command `name` (e.g. t2t-decoder), found beside this
    Python, else on PATH: its script, or itself through avx2_host."""
    beside = Path(sys.executable).absolute().with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"No {name} beside {sys.executable} or on PATH: pip install -e . first.")
    return avx2_host.command(name, found)


def run(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The stdout of a process that must succeed; its stderr's end if it does not."""
    return timed_run(argv, env)[1].stdout


def timed_run(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess]:
    """The wall seconds and the output (text) of a process that must succeed."""
    start = time.monotonic()
    finished = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    if code := finished.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({code}):\n{finished.stderr[-3000:]}")
    return seconds, finished


def decoding_run(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[float, float]:
    """A decoding process's wall seconds, and the sentences/s of its decoding alone (its
    last "Decoded N/N sentences (X sentences/s)" line: first sentence to last)."""
    seconds, finished = timed_run(argv, env)
    rates = re.findall(r"Decoded (\d+)/\1 sentences \(([\d.]+) sentences/s\)", finished.stderr)
    return seconds, float(rates[-1][1]) if rates else float("nan")


def t2t_benchmark(arguments: Sequence[str], env: Mapping[str, str] | None = None) -> dict:
    """The JSON line `t2t-benchmark` prints for `arguments`."""
    stdout = run([*t2t("t2t-benchmark"), *arguments], env)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"t2t-benchmark {' '.join(arguments)} printed no JSON line:\n{stdout}")
    return json.loads(lines[-1])


def emit(line: Mapping, machine: Mapping | None = None) -> None:
    """One JSON line on stdout: `line`, then the machine's fields (`machine_facts`)."""
    print(json.dumps({**line, **(machine or {})}), flush=True)


# The fields with which `t2t-benchmark` names the machine on every line (t2t_keras.benchmark.host).
MACHINE_FIELDS = ("cpu", "cores", "cpu_flags", "onednn", "matmul_fp32_flops_per_s")


def machine_facts(env: Mapping[str, str] | None = None) -> dict:
    """This machine as `t2t-benchmark --mode=matmul` names it: CPU, flags, oneDNN, fp32
    rate; measured with `env`, the environment of the benchmark's t2t processes."""
    line = t2t_benchmark(["--mode=matmul", "--steps=5", "--warmup_steps=2"], env)
    return {name: line[name] for name in MACHINE_FIELDS}


def describe(machine: Mapping) -> str:
    """`machine_facts` in words: CPU, cores, flags, oneDNN, float32 rate."""
    cpu_flags = ", ".join(name for name, on in machine["cpu_flags"].items() if on)
    rate = f"{machine['matmul_fp32_flops_per_s'] / 1e9:.0f} GFLOP/s fp32"
    onednn = f"oneDNN {'on' if machine['onednn'] else 'off'}"
    return f"{machine['cpu']} ({machine['cores']} cores; {cpu_flags}; {onednn}; {rate})"
