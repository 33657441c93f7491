"""Running the server: bind, compile in the background, serve, drain on SIGTERM.

The port is bound once the model is loaded (a model that cannot be loaded
fails before it), and answers at once: `/healthz` says alive, `/readyz`
says 503 until every shape of the search is compiled, then 200. On SIGTERM
or SIGINT `/readyz` turns 503 and new requests are answered 503 with
`Connection: close`; new connections are held back, those the kernel had
already completed are accepted and answered, then the listening socket
closes (`listener`: it resets no one), the requests in flight finish within
`grace_seconds`, and the process exits 0.
"""

from __future__ import annotations

import re
import signal
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import uvicorn
from absl import logging

from t2t_keras.data.problem import Problem
from t2t_keras.server import listener
from t2t_keras.server.app import ServerState, make_app
from t2t_keras.serving.backends import BatchBackend, SlotBackend
from t2t_keras.serving.engine import Backend, Engine
from t2t_keras.serving.translator import SentenceTranslator, Translator

# Once draining: how long nothing may wait to be accepted and no connection be idle
# before the listening socket closes (a handshake's last ACK is one round trip
# away), and the longest it stays open.
LAST_CONNECTIONS_SECONDS = 0.25
LONGEST_LISTEN_SECONDS = 3.0


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


class _DrainingServer(uvicorn.Server):
    """uvicorn's server that drains before it closes its listening socket.

    On the first signal the state turns draining (requests get 503 and
    `Connection: close`), the kernel stops completing new handshakes
    (`listener.stop_new_connections`), and the socket stays open until the
    connections the kernel had completed are accepted and no open connection
    is idle (its request unread), for LAST_CONNECTIONS_SECONDS, at most
    LONGEST_LISTEN_SECONDS: then uvicorn closes it and finishes the requests
    in flight. A second SIGINT stops at once.
    """

    def __init__(
        self, config: uvicorn.Config, state: ServerState, listening: socket.socket
    ) -> None:
        super().__init__(config)
        self.state, self.listening = state, listening
        self._drain_started: float | None = None
        self._quiet_since: float | None = None

    def handle_exit(self, sig: int, frame: Any) -> None:
        """As uvicorn's, but the signal is handled here, not raised again at the end: a
        drained server exits 0."""
        if self._drain_started is None:
            logging.info("Signal %d: draining (new requests get 503).", sig)
            self.state.draining = True
            self._drain_started = time.monotonic()
            if not listener.stop_new_connections(self.listening):
                self.should_exit = True  # Nothing to wait for: the kernel keeps completing.
        elif sig == signal.SIGINT:
            self.force_exit = self.should_exit = True

    async def on_tick(self, counter: int) -> bool:
        if self._drain_started is not None and not self.should_exit:
            self.should_exit = self._listened_enough(time.monotonic())
        return await super().on_tick(counter)

    def _listened_enough(self, now: float) -> bool:
        """Whether the listening socket may close: nothing to accept and no connection
        idle, for LAST_CONNECTIONS_SECONDS, or LONGEST_LISTEN_SECONDS since the signal."""
        assert self._drain_started is not None
        idle = any(map(_idle, self.server_state.connections))
        if idle or listener.accept_queue(self.listening):
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = now
        if now - self._drain_started >= LONGEST_LISTEN_SECONDS:
            return True
        return self._quiet_since is not None and now - self._quiet_since >= LAST_CONNECTIONS_SECONDS


def _idle(connection: Any) -> bool:
    """A connection with no request being answered: accepted but unread, or kept alive
    between requests (uvicorn's protocol closes these at once when it shuts down)."""
    cycle = getattr(connection, "cycle", None)
    return cycle is None or bool(getattr(cycle, "response_complete", True))


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
    server = _DrainingServer(config, state, listening)
    threading.Thread(target=compile_then_ready, name="compile", daemon=True).start()
    server.run(sockets=[listening])
    state.draining = True
    state.engine.stop(timeout=grace_seconds)
