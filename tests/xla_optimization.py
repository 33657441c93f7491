"""How XLA compiles in the tests, and an environment that undoes it.

conftest.py has the run's XLA code compiled without LLVM's optimizations and
with XLA's earlier CPU code emitters for fused loops (TEST_FLAGS in XLA_FLAGS,
each unless XLA_FLAGS sets it already): the tests' tiny shapes run as fast
either way, and compiling takes less time (see conftest.py). `optimized` is
the environment of a process that compiles as users' processes do.
"""

from __future__ import annotations

import os
from pathlib import Path

TEST_FLAGS = (
    "--xla_backend_optimization_level=0",
    "--xla_cpu_use_fusion_emitters=false",
)


def _name(flag: str) -> str:
    return flag.split("=")[0]


def optimized(cache_dir: Path | None = None) -> dict[str, str]:
    """This process's environment with XLA compiling as by default, and TensorFlow's
    persistent compilation cache in `cache_dir` (None: none set, so a t2t-* command keeps
    its own under XDG_CACHE_HOME): the run's cache holds the tests' code, which
    TensorFlow's keys (the computation, not the options) would hand it."""
    test_names = {_name(flag) for flag in TEST_FLAGS}
    xla_flags = " ".join(
        flag for flag in os.environ.get("XLA_FLAGS", "").split() if _name(flag) not in test_names
    )
    cache = "" if cache_dir is None else f"--tf_xla_persistent_cache_directory={cache_dir}"
    return {**os.environ, "XLA_FLAGS": xla_flags, "TF_XLA_FLAGS": cache}
