"""What this machine's CPU can do, read before TensorFlow loads, and the choices that follow.

TensorFlow decides once, as it loads, whether its oneDNN kernels run: on
Linux it turns them on by itself only for CPUs with AVX512_VNNI, AVX512_BF16,
AVX_VNNI or AMX (`TF_ENABLE_ONEDNN_OPTS` overrides). On an x86-64 CPU with
AVX2 and FMA but none of those (most laptops and many cloud machines) it
leaves them off, and the matrix products of training and of the graph
around the compiled search run slower. `choose_onednn` turns them on there;
a user's own `TF_ENABLE_ONEDNN_OPTS` always wins.

`prepare_tensorflow` applies that choice, and gives TensorFlow's CPU memory
its BFC allocator: glibc maps every block above 32 MiB afresh, so a training
step's largest tensors (transformer_base's [64 * 30, 8000] logits and their
gradients) were faulted in page by page at every step.

`native_bfloat16` says whether bfloat16 matrix products run natively
(AVX512_BF16 or AMX, reachable by oneDNN), which `--mixed_precision=auto`
follows. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Mapping, MutableMapping

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
ONEDNN_ISA_VARIABLE = "ONEDNN_MAX_CPU_ISA"
ALLOCATOR_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
# The features for which TensorFlow turns oneDNN on by itself on Linux
# (tensorflow/core/util/util.cc), as /proc/cpuinfo names them.
TENSORFLOW_ONEDNN_FEATURES = frozenset(
    {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"}
)
# The features a figure names (`Cpu.isa_flags`).
NAMED_FEATURES = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")
BFLOAT16_FEATURES = frozenset({"avx512_bf16", "amx_bf16"})
# oneDNN's ISA names from ONEDNN_MAX_CPU_ISA at which bfloat16 products are native.
_ONEDNN_BFLOAT16_ISAS = ("AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX10", "ALL")
# What oneDNN was measured to be worth on a CPU capped at AVX2 (docs/fast_inference.md).
_AVX2_MEASUREMENT = "capped at AVX2, they trained 1.37x faster and decoded no slower"


@dataclasses.dataclass(frozen=True)
class Cpu:
    """A CPU as the operating system describes it.

    Args:
      model: its name, e.g. "AMD EPYC 7B13"; "" if unknown.
      flags: its feature flags as /proc/cpuinfo names them (lower case); empty if unknown.
      architecture: platform.machine(), e.g. "x86_64", "aarch64", "arm64".
      system: platform.system(), e.g. "Linux", "Darwin", "Windows".
    """

    model: str
    flags: frozenset[str]
    architecture: str
    system: str

    @property
    def is_x86(self) -> bool:
        return self.architecture.lower() in ("x86_64", "amd64")

    @property
    def isa_flags(self) -> dict[str, bool]:
        """The features that decide its speed, by name; amx_bf16 stands for AMX."""
        return {name: name in self.flags for name in NAMED_FEATURES}


def read_cpu(cpuinfo_path: str = "/proc/cpuinfo") -> Cpu:
    """This machine's CPU: from cpuinfo_path where it exists (Linux), else what Python knows."""
    model, flags = "", frozenset[str]()
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as cpuinfo:
            model, flags = parse_cpuinfo(cpuinfo.read())
    except OSError:
        pass
    return Cpu(
        model=model or platform.processor(),
        flags=flags,
        architecture=platform.machine(),
        system=platform.system(),
    )


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """(model name, flags) of the first processor in a /proc/cpuinfo text."""
    model, flags = "", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:  # "Features" on ARM.
            flags = value
    return model, frozenset(flags.lower().split())


@dataclasses.dataclass(frozen=True)
class OnednnChoice:
    """Whether t2t_keras sets TF_ENABLE_ONEDNN_OPTS, and why.

    Args:
      enable: True: set it to 1; None: leave TensorFlow (or the user) to decide.
      reason: one sentence for the log.
    """

    enable: bool | None
    reason: str


def choose_onednn(cpu: Cpu, environ: Mapping[str, str]) -> OnednnChoice:
    """Turns TensorFlow's oneDNN kernels on where TensorFlow leaves them off and they pay."""
    if ONEDNN_VARIABLE in environ:
        return OnednnChoice(
            None, f"{ONEDNN_VARIABLE}={environ[ONEDNN_VARIABLE]} is set, so it is kept as set."
        )
    if not (cpu.is_x86 and cpu.system == "Linux"):
        return OnednnChoice(
            None,
            f"left to TensorFlow: only Linux x86-64 was measured, not {cpu.system} "
            f"{cpu.architecture}.",
        )
    found = sorted(cpu.flags & TENSORFLOW_ONEDNN_FEATURES)
    if found:
        named = ", ".join(name.upper() for name in found)
        return OnednnChoice(None, f"TensorFlow turns them on itself for this CPU ({named}).")
    if {"avx2", "fma"} <= cpu.flags:
        return OnednnChoice(
            True,
            f"turned on ({ONEDNN_VARIABLE}=1): TensorFlow leaves them off on a CPU with AVX2 "
            f"but without AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX, and {_AVX2_MEASUREMENT}.",
        )
    return OnednnChoice(None, "left off as TensorFlow leaves them: a CPU without AVX2 and FMA.")


def apply_onednn_choice(
    cpu: Cpu | None = None, environ: MutableMapping[str, str] = os.environ
) -> OnednnChoice:
    """Chooses (`choose_onednn`) and sets the variable; call before TensorFlow loads."""
    choice = choose_onednn(read_cpu() if cpu is None else cpu, environ)
    if choice.enable:
        environ[ONEDNN_VARIABLE] = "1"
    return choice


def prepare_tensorflow(
    cpu: Cpu | None = None, environ: MutableMapping[str, str] = os.environ
) -> list[str]:
    """Sets what TensorFlow reads as it loads (oneDNN, the CPU allocator); returns why, for the log.

    Call before TensorFlow loads; a variable the user set is kept.
    """
    reasons = [f"TensorFlow's oneDNN kernels: {apply_onednn_choice(cpu, environ).reason}"]
    if ALLOCATOR_VARIABLE in environ:
        value = environ[ALLOCATOR_VARIABLE]
        return [
            *reasons,
            f"CPU allocator: {ALLOCATOR_VARIABLE}={value} is set, so it is kept as set.",
        ]
    environ[ALLOCATOR_VARIABLE] = "true"
    return [
        *reasons,
        f"CPU allocator: BFC ({ALLOCATOR_VARIABLE}=true): blocks are kept for the next step "
        "instead of mapped afresh.",
    ]


def native_bfloat16(cpu: Cpu, onednn_on: bool, environ: Mapping[str, str]) -> tuple[bool, str]:
    """Whether bfloat16 matrix products run natively on this CPU, and why (one sentence).

    They need AVX512_BF16 or AMX, and TensorFlow's oneDNN kernels to reach
    them (Eigen's only emulate bfloat16), not capped below by ONEDNN_MAX_CPU_ISA.
    """
    found = sorted(cpu.flags & BFLOAT16_FEATURES)
    if not found:
        return False, "the CPU has neither AVX512_BF16 nor AMX, so bfloat16 would be emulated"
    if not onednn_on:
        return False, "TensorFlow's oneDNN kernels are off, and its others emulate bfloat16"
    if onednn_capped_below_bfloat16(environ):
        cap = environ[ONEDNN_ISA_VARIABLE]
        return False, f"{ONEDNN_ISA_VARIABLE}={cap} keeps oneDNN below its bfloat16 instructions"
    return True, f"the CPU runs bfloat16 natively ({', '.join(n.upper() for n in found)})"


def onednn_capped_below_bfloat16(environ: Mapping[str, str]) -> bool:
    """Whether ONEDNN_MAX_CPU_ISA keeps oneDNN from bfloat16 instructions the CPU may have.

    TensorFlow still sees them and hands oneDNN bfloat16 products it then cannot build.
    """
    cap = environ.get(ONEDNN_ISA_VARIABLE, "").upper()
    return bool(cap) and not cap.startswith(_ONEDNN_BFLOAT16_ISAS)
