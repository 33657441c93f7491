"""Running the server: bind, compile in the background, serve, drain on SIGTERM.

The port is bound once the model is loaded (a model that cannot be loaded
fails before it), and answers at once: `/healthz` says alive, `/readyz`
says 503 until every shape of the search is compiled, then 200. On SIGTERM
or SIGINT `/readyz` turns 503 and new requests are refused with 503, the
listening socket closes, the requests in flight finish within
`grace_seconds`, and the process exits 0.
"""

from __future__ import annotations

import re
import signal
import socket
import threading
from collections.abc import Sequence
from typing import Any

import uvicorn
from absl import logging

from t2t_keras.data.problem import Problem
from t2t_keras.errors import UserError
from t2t_keras.server.app import ServerState, make_app
from t2t_keras.serving.backends import BatchBackend, SlotBackend
from t2t_keras.serving.engine import Backend, Engine
from t2t_keras.serving.translator import SentenceTranslator, Translator

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def make_engine(
    translator: SentenceTranslator,
    problem: Problem | None,
    widths: Sequence[int],
    max_queue_sentences: int,
) -> Engine:
    """The engine over our slot search (a `Translator`), or any runtime's batches."""
    backend: Backend
    if isinstance(translator, Translator):
        backend = SlotBackend(translator, widths, translator.settings.batch_size)
    else:
        backend = BatchBackend(translator)
    return Engine(translator, backend, problem, max_queue_sentences)


def version_of(checkpoint: str) -> int:
    """The model version TensorFlow Serving's API names: the checkpoint's step (ckpt-4000
    is 4000), 1 when its name has none."""
    found = re.search(r"(\d+)$", checkpoint.rstrip("/"))
    return int(found[1]) if found else 1


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a `UserError` saying why not."""
    if host not in LOOPBACK:
        logging.warning(
            "Serving on %s: any machine that reaches it can use the model. Give "
            "--auth_token_file, or serve on 127.0.0.1 behind a proxy.",
            host,
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise UserError(
            f"cannot listen on {host}:{port} ({error.strerror}); give a free --port, or "
            "--port=0 for any, and a --host of this machine."
        ) from None
    listening.listen(2048)
    listening.set_inheritable(True)
    return listening


class _DrainingServer(uvicorn.Server):
    """uvicorn's server that marks the state draining the moment a signal arrives."""

    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self.state = state

    def handle_exit(self, sig: int, frame: Any) -> None:
        """As uvicorn's, but the signal is handled here, not raised again at the end: a
        drained server exits 0. A second SIGINT stops at once."""
        if not self.state.draining:
            logging.info("Signal %d: draining (new requests get 503).", sig)
        self.state.draining = True
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True


def serve(state: ServerState, listening: socket.socket, grace_seconds: float, log_url: str) -> None:
    """Serves until a signal: compiles the engine meanwhile, drains, stops the engine."""

    def compile_then_ready() -> None:
        try:
            state.engine.start()
        except Exception:
            logging.exception("Compiling the search failed; the server stays unready.")
            return
        logging.info("Ready: %s (model %s, version %d).", log_url, state.model_name, state.version)

    config = uvicorn.Config(
        make_app(state),
        log_level="warning",
        timeout_graceful_shutdown=max(1, round(grace_seconds)),
        lifespan="off",
        access_log=False,
    )
    server = _DrainingServer(config, state)
    threading.Thread(target=compile_then_ready, name="compile", daemon=True).start()
    server.run(sockets=[listening])
    state.draining = True
    state.engine.stop(timeout=grace_seconds)
