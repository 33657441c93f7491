"""How optimized XLA's compiled code is in the tests, and an environment that undoes it.

conftest.py has the run's XLA code compiled without LLVM's optimizations
(UNOPTIMIZED in XLA_FLAGS, unless XLA_FLAGS sets a level of its own): the
tests' tiny shapes run as fast either way, and the run takes about a third
less CPU time. `optimized` is the environment of a process that compiles as
users' processes do.
"""

from __future__ import annotations

import os
from pathlib import Path

OPTION = "--xla_backend_optimization_level"
UNOPTIMIZED = f"{OPTION}=0"


def optimized(cache_dir: Path | None = None) -> dict[str, str]:
    """This process's environment with XLA at its default optimization, and TensorFlow's
    persistent compilation cache in `cache_dir` (None: none set, so a t2t-* command keeps
    its own under XDG_CACHE_HOME): the run's cache holds unoptimized code, which
    TensorFlow's keys (the computation, not the options) would hand it."""
    xla_flags = " ".join(
        flag for flag in os.environ.get("XLA_FLAGS", "").split() if not flag.startswith(OPTION)
    )
    cache = "" if cache_dir is None else f"--tf_xla_persistent_cache_directory={cache_dir}"
    return {**os.environ, "XLA_FLAGS": xla_flags, "TF_XLA_FLAGS": cache}
