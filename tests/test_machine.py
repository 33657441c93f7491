"""What t2t_keras reads of the CPU before TensorFlow loads, and what it chooses from it."""

from __future__ import annotations

import pytest

from t2t_keras import machine
from t2t_keras.machine import Cpu

# Abridged /proc/cpuinfo of three real kinds of host.
ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2
processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2
"""
ZEN4 = """model name\t: AMD EPYC 9R14
flags\t\t: fma avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16 avx512_vnni
"""
GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 bf16 i8mm
CPU implementer\t: 0x41
"""


def cpu(text: str, architecture: str = "x86_64", system: str = "Linux") -> Cpu:
    model, flags = machine.parse_cpuinfo(text)
    return Cpu(model=model, flags=flags, architecture=architecture, system=system)


def test_cpuinfo_gives_the_model_and_the_flags_of_the_first_processor() -> None:
    assert machine.parse_cpuinfo(ZEN3) == (
        "AMD EPYC 7B13",
        frozenset(
            [
                "fpu",
                "sse",
                "sse2",
                "ssse3",
                "fma",
                "sse4_1",
                "sse4_2",
                "avx",
                "f16c",
                "avx2",
                "bmi2",
            ]
        ),
    )
    assert cpu(ZEN4).isa_flags == {
        "avx2": True,
        "fma": True,
        "avx512f": True,
        "avx512_vnni": True,
        "avx512_bf16": True,
        "amx_bf16": False,
    }
    assert "bf16" in cpu(GRAVITON, "aarch64").flags and not cpu(GRAVITON, "aarch64").is_x86


def test_a_missing_cpuinfo_leaves_the_flags_unknown(tmp_path) -> None:
    found = machine.read_cpu(str(tmp_path / "absent"))
    assert found.flags == frozenset() and found.architecture
    assert machine.choose_onednn(found, {}).enable is None  # Nothing is turned on blind.


def test_onednn_is_turned_on_for_an_avx2_cpu_that_tensorflow_leaves_off() -> None:
    choice = machine.choose_onednn(cpu(ZEN3), {})
    assert choice.enable is True
    assert "TF_ENABLE_ONEDNN_OPTS=1" in choice.reason and "AVX2" in choice.reason
    environ: dict[str, str] = {}
    assert machine.apply_onednn_choice(cpu(ZEN3), environ) == choice
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1"}


def test_onednn_is_left_to_tensorflow_where_it_turns_them_on_itself() -> None:
    environ: dict[str, str] = {}
    choice = machine.apply_onednn_choice(cpu(ZEN4), environ)
    assert choice.enable is None and environ == {}
    assert "TensorFlow turns them on itself" in choice.reason
    assert "AVX512_BF16, AVX512_VNNI" in choice.reason


@pytest.mark.parametrize("value", ["0", "false", "1"])
@pytest.mark.parametrize("host", [ZEN3, ZEN4])
def test_the_users_own_setting_always_wins(value: str, host: str) -> None:
    environ = {"TF_ENABLE_ONEDNN_OPTS": value}
    choice = machine.apply_onednn_choice(cpu(host), environ)
    assert choice.enable is None and environ == {"TF_ENABLE_ONEDNN_OPTS": value}
    assert f"TF_ENABLE_ONEDNN_OPTS={value} is set" in choice.reason


@pytest.mark.parametrize(
    ("host", "architecture", "system"),
    [
        (GRAVITON, "aarch64", "Linux"),
        (ZEN3, "x86_64", "Windows"),
        ("flags: sse2 avx", "x86_64", "Linux"),
    ],
)
def test_unmeasured_hosts_are_left_as_tensorflow_leaves_them(
    host: str, architecture: str, system: str
) -> None:
    choice = machine.choose_onednn(cpu(host, architecture, system), {})
    assert choice.enable is None and choice.reason


@pytest.mark.parametrize(
    ("host", "onednn_on", "environ", "native"),
    [
        (ZEN4, True, {}, True),
        (ZEN4, True, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, True),
        (ZEN4, True, {"ONEDNN_MAX_CPU_ISA": "avx2"}, False),
        (ZEN4, False, {}, False),
        (ZEN3, True, {}, False),
        ("flags: avx2 fma amx_tile amx_bf16", True, {}, True),
    ],
)
def test_bfloat16_is_native_only_with_the_instructions_and_onednn_to_reach_them(
    host: str, onednn_on: bool, environ: dict[str, str], native: bool
) -> None:
    found, why = machine.native_bfloat16(cpu(host), onednn_on, environ)
    assert found is native and why


def test_tensorflow_is_prepared_with_the_bfc_allocator_unless_the_user_chose() -> None:
    environ: dict[str, str] = {}
    reasons = machine.prepare_tensorflow(cpu(ZEN3), environ)
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPU_ALLOCATOR_USE_BFC": "true"}
    assert reasons[0].startswith("TensorFlow's oneDNN kernels: turned on")
    assert reasons[1].startswith("CPU allocator: BFC")
    theirs = {"TF_CPU_ALLOCATOR_USE_BFC": "false", "TF_ENABLE_ONEDNN_OPTS": "0"}
    reasons = machine.prepare_tensorflow(cpu(ZEN3), theirs)
    assert theirs == {"TF_CPU_ALLOCATOR_USE_BFC": "false", "TF_ENABLE_ONEDNN_OPTS": "0"}
    assert "TF_CPU_ALLOCATOR_USE_BFC=false is set, so it is kept" in reasons[1]
