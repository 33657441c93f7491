"""The built-in catalog of problems, hparams sets and models, registered by `load()`.

    from t2t_keras import catalog, registry

    catalog.load()                     # t2t_keras's own problems, hparams sets, models
    catalog.load(usr_dir="~/my_t2t")   # and a user's package, as --t2t_usr_dir does
    problem = registry.problem("translate_ende_wmt32k")

The registry itself registers nothing: importing it costs nothing and changes
nothing. The t2t-* commands call `load()` before they look a name up; Python
users call it once, before `registry.problem(...)` or `load_trained(...)`.
"""

from __future__ import annotations

import importlib

from t2t_keras import registry

# Imported by name; an import error is never swallowed.
CATALOG_MODULES = ("t2t_keras.models.transformer", "t2t_keras.problems", "t2t_keras.hparams")


def load(usr_dir: str | None = None) -> None:
    """Registers the built-in catalog and, if given, the user's package at `usr_dir`.

    Loading twice registers nothing twice: a module is imported once.

    Raises:
      UsrDirError: the user's package could not be imported (see
        `registry.import_usr_dir`).
    """
    for module in CATALOG_MODULES:
        importlib.import_module(module)
    if usr_dir:
        registry.import_usr_dir(usr_dir)
