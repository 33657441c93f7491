"""The HTTP front: validate, enqueue, await; Starlette on uvicorn.

Starlette (ASGI) rather than a larger framework: the routes are few, the
JSON is checked by hand (`api`) with messages of our own, and uvicorn gives
graceful shutdown and a well-kept HTTP/1.1 parser. The engine runs in its
own thread; a request awaits its future on the event loop, so slow or
many clients never block the search, and a client that disconnects has
its waiting sentences taken out of the queue.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import html
import time
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from t2t_keras.server import api
from t2t_keras.server.metrics import Metrics
from t2t_keras.serving.engine import Engine, QueueFull, Reply, Stopped

# A client told to come back later (queue full, compiling, draining) waits this long.
RETRY_AFTER_SECONDS = 1


@dataclasses.dataclass
class ServerState:
    """What the routes share: the engine, the model's name and version, the limits."""

    engine: Engine
    model_name: str
    version: int
    several: bool  # Several hypotheses an input (beams, samples): outputs are lists.
    seeded: bool  # Requests may give sampling's seed (our search, sampling).
    limits: api.Limits
    token: str | None = None
    draining: bool = False

    def ready(self) -> bool:
        return self.engine.ready and not self.draining


def make_app(state: ServerState) -> Starlette:
    """The ASGI application over a started (or starting) engine."""
    metrics = Metrics(state.engine, state.ready)
    page = resources.files("t2t_keras.server").joinpath("page.html").read_text(encoding="utf-8")
    page = page.replace("{{model}}", html.escape(state.model_name))
    page = page.replace("{{version}}", str(state.version))

    async def translate(request: Request) -> Response:
        return await _answer(request, state, metrics, "translate")

    async def models(request: Request) -> Response:
        return await _answer(request, state, metrics, "models")

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> Response:
        if state.ready():
            return JSONResponse({"status": "ready"})
        why = "draining" if state.draining else "compiling"
        return JSONResponse({"status": why}, status_code=503)

    async def metrics_page(request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if error := _unauthorized(request, state):
            return error
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    routes = [
        Route("/", index),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_page),
        Route("/v1/translate", translate, methods=["POST"]),
        Route("/v1/models/{rest:path}", models, methods=["GET", "POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(_CloseWhileDraining, state=state)])


class _CloseWhileDraining:
    """ASGI middleware: once the server drains, every response says `Connection: close`,
    so a client's next request opens a connection the draining server no longer takes."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and self.state.draining:
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_closing)


async def _answer(request: Request, state: ServerState, metrics: Metrics, route: str) -> Response:
    """Runs a route, turning `ApiError` into its status and {"error": sentence}."""
    started = time.monotonic()
    try:
        if error := _unauthorized(request, state):
            return error
        if route == "translate":
            body, sentences = await _translate(request, state)
        else:
            body, sentences = await _models(request, state)
        response: Response = JSONResponse(body)
        metrics.sentences.inc(sentences)
        if sentences:
            metrics.latency.observe(time.monotonic() - started)
    except api.ApiError as error:
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if error.status == 503 else None
        response = JSONResponse({"error": error.message}, error.status, headers)
    metrics.requests.labels(route, str(response.status_code)).inc()
    return response


def _unauthorized(request: Request, state: ServerState) -> Response | None:
    if state.token is None:
        return None
    given = request.headers.get("authorization", "")
    if hmac.compare_digest(given.encode(), f"Bearer {state.token}".encode()):
        return None
    return JSONResponse(
        {"error": 'A bearer token is required: send the header "Authorization: Bearer TOKEN".'},
        401,
        {"WWW-Authenticate": "Bearer"},
    )


async def _translate(request: Request, state: ServerState) -> tuple[dict[str, Any], int]:
    body = api.read_json(await request.body(), state.limits)
    texts = api.translate_inputs(body, state.limits)
    reply = await _decode(request, state, texts, api.request_seed(body, state.seeded))
    return api.translate_reply(reply, state.several), len(texts)


async def _models(request: Request, state: ServerState) -> tuple[dict[str, Any], int]:
    """TensorFlow Serving's routes under /v1/models/: predict, status, metadata."""
    rest = request.path_params["rest"]
    path, _, verb = rest.partition(":")
    parts = path.split("/")
    name, parts = parts[0], parts[1:]
    if name != state.model_name:
        raise api.ApiError(404, f'No model "{name}"; this server serves "{state.model_name}".')
    if parts[:1] == ["versions"]:
        if len(parts) < 2 or parts[1] != str(state.version):
            given = parts[1] if len(parts) > 1 else ""
            raise api.ApiError(
                404, f'No version "{given}" of "{name}"; this server serves version '
                f"{state.version}.",
            )  # fmt: skip
        parts = parts[2:]
    if request.method == "POST" and verb == "predict" and not parts:
        body = api.read_json(await request.body(), state.limits)
        texts, rows = api.predict_inputs(body, state.limits)
        reply = await _decode(request, state, texts)
        return api.predict_reply(reply, state.several, rows), len(texts)
    if request.method == "GET" and not verb and parts == ["metadata"]:
        return api.model_metadata(name, state.version, state.several), 0
    if request.method == "GET" and not verb and not parts:
        return api.model_status(state.version, "AVAILABLE" if state.ready() else "LOADING"), 0
    raise api.ApiError(
        404, f"No route {request.method} {request.url.path}; this server answers POST "
        f"/v1/models/{name}:predict and GET /v1/models/{name}[/metadata].",
    )  # fmt: skip


async def _decode(
    request: Request, state: ServerState, texts: list[str], seed: int | None = None
) -> Reply:
    """Queues the texts and awaits their reply; a client gone leaves the queue."""
    if not state.ready():
        why = "is shutting down" if state.draining else "is still compiling its search"
        raise api.ApiError(503, f"The server {why}; retry in a moment.")
    try:
        queued = state.engine.submit(texts, seed)
    except QueueFull as error:
        raise api.ApiError(
            503, f"The server's queue is full ({error}); retry in a moment."
        ) from None
    except Stopped:
        raise api.ApiError(503, "The server is shutting down; retry in a moment.") from None
    reply: asyncio.Future[Reply] = asyncio.wrap_future(queued.future)
    gone: asyncio.Future[None] = asyncio.ensure_future(_disconnected(request))
    either: list[asyncio.Future[Any]] = [reply, gone]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if reply.done():
        gone.cancel()
        return reply.result()
    state.engine.cancel(queued)
    reply.cancel()
    raise api.ApiError(499, "The client closed the connection.")


async def _disconnected(request: Request) -> None:
    """Returns when the client has closed its connection (the body is read by then)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
