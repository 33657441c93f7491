"""How a t2t-* binary runs: flags parsed, TensorFlow loaded quietly, errors turned into exits.

User errors print one paragraph and exit with status 2; a trainer stopped
from outside exits with the status that asks for a restart; a write that
found no room says so. Before TensorFlow loads, its oneDNN kernels are turned
on where TensorFlow would leave them off and they pay, and its CPU memory gets
the BFC allocator (`t2t_keras.machine`); the log says what was chosen and why. The
import is frozen out of later garbage collections. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from typing import NoReturn

from absl import app, flags, logging

from t2t_keras import machine
from t2t_keras.bin import tensor2tensor_flags, tensorflow_logs
from t2t_keras.errors import UserError
from t2t_keras.termination import Restartable

FLAGS = flags.FLAGS
_HELP_FLAGS = {"?", "help", "helpfull", "helpshort", "helpxml"}
# A write that found no room: a full disk, a full quota, the file-size limit (ulimit -f).
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
# Python's last garbage collection at exit walks every object TensorFlow made,
# about a second; the process is ending, so its objects are frozen instead
# (after the other exit handlers, which still run). Registered once per process.
atexit.register(gc.freeze)


def run(
    main: Callable[[], int | None],
    uses_tensorflow: bool = True,
    before_devices: Callable[[], None] | None = None,
) -> NoReturn:
    """Runs `main` as an absl program; user errors exit with status 2.

    A trainer stopped by a termination signal or a lost worker prints its
    message and exits with the status that says "restart me".

    TensorFlow is imported (quietly) before `main` unless it does not use it.
    `before_devices` runs as soon as the flags are parsed: before TensorFlow
    initializes its devices (in an absl start-up callback of its own, ahead of
    `main`), when it reads its environment variables once and for all.
    """
    _show_in_help(main.__module__)

    def absl_main(argv: list[str]) -> int | None:
        if len(argv) > 1:
            fail(f"unexpected arguments {' '.join(argv[1:])!r}; every option is a --flag.")
        if uses_tensorflow:
            # Loaded already (in-process tests): too late to prepare, and not ours to freeze.
            loading = "tensorflow" not in sys.modules
            if loading:
                for reason in machine.prepare_tensorflow():
                    logging.info(reason)
            with _imports_kept() if loading else contextlib.nullcontext():
                tensorflow_logs.import_tensorflow(verbose=FLAGS.verbosity > 0)
        try:
            return main()
        except UserError as error:
            fail(str(error))
        except Restartable as stop:
            _restartable_exit(stop)
        except BrokenPipeError:
            _output_closed()
        except Exception as error:
            message = no_room_message(error)
            if message is None:
                raise
            fail(message)

    def parse_flags(argv: list[str]) -> list[str]:
        arguments = _parse_flags(argv)
        if before_devices is not None:
            before_devices()
        return arguments

    app.run(absl_main, flags_parser=parse_flags)


@contextlib.contextmanager
def _imports_kept() -> Iterator[None]:
    """Python's garbage collector rests while TensorFlow imports, and then freezes
    what the import made: half a million objects, TensorFlow's modules above all,
    that live as long as the process and that each full collection would walk
    again (a tenth of a 10-line decoding process's time). The little garbage the
    import leaves, about a megabyte, is kept with them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
    gc.freeze()


def _output_closed() -> NoReturn:
    """The reader of standard output went away (`| head`): stop quietly, as Unix
    tools do, with the status of a process ended by SIGPIPE."""
    # Nothing is left to flush at exit; captured in-process, stdout is no file to redirect.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(128 + signal.SIGPIPE)


def _restartable_exit(stop: Restartable) -> NoReturn:
    print(f"{_program()}: {' '.join(stop.message.split())}", file=sys.stderr)
    if stop.hard_exit:
        logging.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(stop.exit_code)
    sys.exit(stop.exit_code)


def no_room_message(error: BaseException) -> str | None:
    """The error to print for a write that found the disk full, else None.

    Python reports it as an OSError (ENOSPC, EDQUOT or EFBIG, the last when
    the file-size limit is reached); TensorFlow's own writers (checkpoints,
    SavedModels, TFRecords) as a tf.errors.OpError whose message ends in the
    same system message. The writers replace nothing until their output is
    complete, so what was written before is kept.
    """
    path, reason = _no_room(error)
    if reason is None:
        return None
    return (
        f"writing {path or 'the output'} failed: {reason}. The disk, your disk quota or the "
        "file-size limit (ulimit -f) has no room for it. Nothing finished before was "
        "replaced or lost; free some space (or write elsewhere) and run the same command again."
    )


def _no_room(error: BaseException | None) -> tuple[str | None, str | None]:
    """(the path written, the system's message), for the error or one it arose from."""
    tensorflow = sys.modules.get("tensorflow")  # Loaded if the error can be one of its.
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _NO_ROOM:
            return error.filename, error.strerror
        if tensorflow is not None and isinstance(error, tensorflow.errors.OpError):
            for reason in map(os.strerror, _NO_ROOM):
                found = re.search(rf"(\S+); {reason}", error.message)
                if found or reason in error.message:
                    return (found.group(1) if found else None), reason
        error = error.__cause__ or error.__context__
    return None, None


def _show_in_help(binary_module: str) -> None:
    """Makes --help print the binary's docstring and its flags.

    absl's --help shows the flags of the module named sys.argv[0] and the
    docstring of __main__, which for an installed console script are neither
    the binary's module nor the modules defining its flags.
    """
    sys.modules["__main__"].__doc__ = sys.modules[binary_module].__doc__
    for module, module_flags in FLAGS.flags_by_module_dict().items():
        if module == binary_module or module.startswith(f"{__package__}."):
            for flag in module_flags:
                FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def _parse_flags(argv: list[str]) -> list[str]:
    try:
        return FLAGS(argv)
    except SystemExit as exit_request:
        # absl exits with 1 after printing help; asking for help is no error.
        asked = {arg.lstrip("-").split("=")[0] for arg in argv[1:]}
        if exit_request.code == 1 and asked & _HELP_FLAGS:
            sys.exit(0)
        raise
    except flags.Error as error:
        message = " ".join(str(arg) for arg in error.args).replace(" ?", "?").rstrip()
        if not message.endswith(("?", ".")):
            message += "."
        hint = tensor2tensor_flags.hint(getattr(error, "flagname", ""))
        fail(f"{message} {hint or ''} Run {_program()} --helpfull to see every flag.")


def fail(message: str) -> NoReturn:
    """Prints `message` as the program's error and exits with status 2."""
    paragraph = " ".join(message.split())  # One paragraph, whatever the message held.
    print(f"{_program()}: error: {paragraph}", file=sys.stderr)
    sys.exit(2)


def _program() -> str:
    return os.path.basename(sys.argv[0]) or "t2t"
