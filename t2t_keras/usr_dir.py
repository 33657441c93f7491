"""Importing a user's package of registrations (--t2t_usr_dir)."""

from __future__ import annotations

import importlib.util
import keyword
import os
import sys
import traceback
import types

from t2t_keras.errors import UserError

_PACKAGE_NEEDED = (
    "The user directory must be a Python package: a directory with an __init__.py "
    "that imports the modules registering your problems, hparams sets and models."
)


class UsrDirError(UserError, ImportError):
    """The --t2t_usr_dir package could not be imported."""


def load_package(usr_dir: str) -> types.ModuleType:
    """Imports the package at `usr_dir` under its directory name.

    sys.path is left alone, and a name that another module already has (loaded
    or installed) is refused rather than shadowed. Importing the same
    directory twice returns the first import. A failed import leaves no module
    behind in sys.modules.

    Raises:
      UsrDirError: naming the path and what went wrong.
    """
    path = os.path.abspath(os.path.expanduser(usr_dir)).rstrip(os.sep) or os.sep
    name = os.path.basename(path)
    init_file = os.path.join(path, "__init__.py")
    _check_layout(usr_dir, path, name, init_file)
    existing = sys.modules.get(name)
    if existing is not None:
        if _same_file(getattr(existing, "__file__", None), init_file):
            return existing
        raise _error(usr_dir, f"its name {name!r} is taken by {_describe(existing)}; rename it")
    installed = importlib.util.find_spec(name)
    if installed is not None and not _same_file(installed.origin, init_file):
        where = installed.origin or "a namespace package"
        raise _error(usr_dir, f"its name {name!r} is taken by the installed {where}; rename it")
    spec = importlib.util.spec_from_file_location(
        name, init_file, submodule_search_locations=[path]
    )
    if spec is None or spec.loader is None:  # Not expected for a directory with __init__.py.
        raise _error(usr_dir, f"Python cannot import {init_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]
        what = str(error) or repr(error)
        raise UsrDirError(
            f"--t2t_usr_dir={usr_dir}: importing package {name!r} failed with "
            f"{type(error).__name__}: {what}{error_location(error, path)}. Fix that "
            "error and run again."
        ) from error
    return module


def _check_layout(usr_dir: str, path: str, name: str, init_file: str) -> None:
    if not os.path.exists(path):
        raise _error(usr_dir, f"no such directory. {_PACKAGE_NEEDED}")
    if not os.path.isdir(path):
        raise _error(usr_dir, f"it is a file, not a directory. {_PACKAGE_NEEDED}")
    if not os.path.isfile(init_file):
        raise _error(usr_dir, f"the directory has no __init__.py. {_PACKAGE_NEEDED}")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise _error(
            usr_dir,
            f"{name!r} is not a valid Python package name; rename the directory using "
            "letters, digits and underscores",
        )


def _error(usr_dir: str, reason: str) -> UsrDirError:
    return UsrDirError(f"--t2t_usr_dir={usr_dir}: {reason.rstrip('.')}.")


def _same_file(first: str | None, second: str) -> bool:
    return first is not None and os.path.exists(first) and os.path.samefile(first, second)


def _describe(module: types.ModuleType) -> str:
    file = getattr(module, "__file__", None)
    return f"the module at {file}" if file else "a built-in module"


def error_location(error: BaseException, path: str) -> str:
    """' (at FILE, line N)' for the innermost traceback frame under `path`."""
    if isinstance(error, SyntaxError) and error.filename:
        return f" (at {error.filename}, line {error.lineno})"
    frames = traceback.extract_tb(error.__traceback__)
    prefix = os.path.realpath(path)
    inside = [
        frame
        for frame in frames
        if os.path.realpath(frame.filename) == prefix
        or os.path.realpath(frame.filename).startswith(prefix + os.sep)
    ]
    return f" (at {inside[-1].filename}, line {inside[-1].lineno})" if inside else ""
