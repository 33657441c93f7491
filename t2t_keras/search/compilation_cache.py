"""Keeping XLA's compiled searches on disk, so a later process skips compiling them.

XLA compiles the search once per batch shape, seconds each on a CPU, and a
process forgets them when it ends. TensorFlow can keep them in a directory
(its persistent compilation cache, TF_XLA_FLAGS
--tf_xla_persistent_cache_directory): each entry is keyed by the compiled
computation, so entries of other models, settings or shapes never mix, and
the model's weights are not in them. t2t-decoder keeps them in
`default_directory()` unless told otherwise.
"""

from __future__ import annotations

import os

from absl import logging

_FLAG = "--tf_xla_persistent_cache_directory"
_VARIABLE = "TF_XLA_FLAGS"


def default_directory() -> str:
    """$XDG_CACHE_HOME/t2t_keras/xla, or ~/.cache/t2t_keras/xla."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "t2t_keras", "xla")


def keep_compilations(directory: str) -> str | None:
    """Has this process keep and reuse XLA compilations in `directory`.

    TensorFlow reads TF_XLA_FLAGS once, when it first initializes its devices
    (which `import tensorflow` has absl do at start-up, before a program's
    main), so call this before: `program.run(before_devices=...)`. A cache directory
    already set in TF_XLA_FLAGS is the user's choice and is kept. A directory
    that cannot be created is not an error: compilations are then not kept
    (a warning says why).

    Args:
      directory: where compilations go; "" keeps none.

    Returns:
      The directory in use, or None.
    """
    given = os.environ.get(_VARIABLE, "")
    if _FLAG in given:
        return given.split(_FLAG, 1)[1].lstrip("=").split()[0]
    if not directory:
        return None
    directory = os.path.abspath(os.path.expanduser(directory))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        logging.warning(
            "Cannot create the XLA cache directory %s (%s): compiled searches are not kept "
            "for later runs. Give --xla_cache_dir a directory you may write to.",
            directory,
            error.strerror or error,
        )
        return None
    os.environ[_VARIABLE] = f"{given} {_FLAG}={directory}".strip()
    return directory
