"""Run a benchmark as on an AVX2-only CPU, on a host with AVX-512: every library capped at AVX2.

    .venv/bin/python benchmarks/avx2_host.py benchmarks/peers.py --rounds=3 --modes=train,decode
    .venv/bin/python benchmarks/avx2_host.py --t2t t2t-benchmark --mode=matmul

The first form runs the benchmark with each library's own cap (`CAPS`,
`XLA_CAP`); YNNPACK has none, so each `t2t-*` command it starts runs through
the second form, which caps YNNPACK's detected instruction sets first.
docs/fast_inference.md says what this measures and what it cannot.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from t2t_keras import machine

# Set in the benchmark's environment: t2t_commands then starts t2t-* commands through here.
MARKER = "T2T_BENCHMARK_AVX2_HOST"
CAPS = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ATEN_CPU_CAPABILITY": "avx2", "CT2_FORCE_CPU_ISA": "AVX2"}  # fmt: skip
XLA_CAP = "--xla_cpu_max_isa=AVX2"
# YNNPACK's arch flags in this TensorFlow's build (ynnpack/base/arch.h): sse2, ssse3,
# sse41, avx, f16c, avx2 and fma3 are bits 0-6; AVX-512 and AMX start at bit 7.
YNN_AVX2_FLAGS = 0x7F
_YNN_FLAGS = "_ZZN3ynn24get_supported_arch_flagsEvE5flags"
_YNN_GUARD = "_ZGVZN3ynn24get_supported_arch_flagsEvE5flags"


def capped_environment(environ: dict[str, str]) -> dict[str, str]:
    """`environ` with every library capped at AVX2, and the marker set."""
    xla_flags = " ".join(part for part in (environ.get("XLA_FLAGS", ""), XLA_CAP) if part)
    return {**environ, **CAPS, "XLA_FLAGS": xla_flags, MARKER: "1"}


def command(name: str, path: str) -> list[str]:
    """The argv that runs the installed t2t-* command `name` (at `path`) capped like the rest."""
    if os.environ.get(MARKER) != "1":
        return [path]
    return [sys.executable, str(Path(__file__).resolve()), "--t2t", name]


def cap_ynnpack() -> None:
    """Loads TensorFlow's C++ library (not its Python package: the command still makes its
    own oneDNN choice first) and sets YNNPACK's detected instruction sets to AVX2."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or spec.origin is None:
        raise SystemExit("TensorFlow is not installed.")
    machine.prepare_tensorflow()  # Read as the library loads: before it.
    ctypes.CDLL(str(Path(spec.origin).parent / "libtensorflow_cc.so.2"))
    library, base = _loaded("libtensorflow_cc.so.2")
    symbols = _symbols(library, (_YNN_FLAGS, _YNN_GUARD))
    flags = ctypes.c_uint64.from_address(base + symbols[_YNN_FLAGS])
    guard = ctypes.c_uint8.from_address(base + symbols[_YNN_GUARD])
    if guard.value:
        raise SystemExit("YNNPACK detected the CPU already: it can no longer be capped.")
    flags.value, guard.value = YNN_AVX2_FLAGS, 1


def _loaded(name: str) -> tuple[str, int]:
    """(path, load address) of the shared library `name` in this process."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5].endswith(name) and int(fields[2], 16) == 0:
                return fields[5], int(fields[0].split("-")[0], 16)
    raise SystemExit(f"{name} is not loaded: is this TensorFlow build one with YNNPACK?")


def _symbols(library: str, names: tuple[str, ...]) -> dict[str, int]:
    """The offsets of local symbols `names` in `library` (by nm, from binutils)."""
    listing = subprocess.run(["nm", library], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] in names:
            found[fields[2]] = int(fields[0], 16)
    if set(found) != set(names):
        raise SystemExit(f"{library} has no {sorted(set(names) - set(found))}: another build.")
    return found


def main(argv: list[str]) -> None:
    if argv[:1] == ["--t2t"] and len(argv) >= 2:
        cap_ynnpack()
        (entry,) = importlib.metadata.entry_points(group="console_scripts", name=argv[1])
        sys.argv = [argv[1], *argv[2:]]
        entry.load()()
        return
    if not argv or argv[0].startswith("-"):
        raise SystemExit(__doc__)
    script = [sys.executable, str(Path(argv[0]).resolve()), *argv[1:]]
    os.execve(sys.executable, script, capped_environment(dict(os.environ)))


if __name__ == "__main__":
    main(sys.argv[1:])
