"""Serving the app with uvicorn, bounded: header, body, keep-alive and connection limits.

uvicorn closes idle keep-alive connections, but it waits forever for a request head that
arrives a byte at a time (slowloris), and counts connections that never send one against
``limit_concurrency``. The protocol below closes a connection whose request head is not
complete in time, and when full closes the oldest connection still waiting for a head
rather than refuse requests. uvicorn's lines name no query string: a key may be in one.

The event loop is uvloop: besides its speed, libuv sheds connections cleanly when the
process runs out of file descriptors, where asyncio's accept loop logs thousands of
lines a second. uvicorn writes a response's head and body separately; the connection's
writes made in one step of the loop are joined, so a response costs one system call.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import socket
from collections.abc import Awaitable, Callable, Iterable
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..config import GatewayConfig
from ..errors import server_error
from ..observability.metrics import (
    Metrics,
)
from .app import create_app
from .errors import RETRY_AFTER_SECONDS, error_response
from .socket_limits import OpenSockets

# Every line about the server starting and stopping (uvicorn's own are named ``uvicorn``).

GC_YOUNG_THRESHOLD = 50_000  # allocations between collections; CPython's default is 700
COALESCE_LIMIT = 64 * 1024  # bytes held back at most before they are written at once


class CoalescedWrites:
    """A transport whose writes made in one step of the event loop leave in one system
    call: a response's head and body, a stream's events queued together."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)
        self._size += len(data)
        if self._size >= COALESCE_LIMIT:
            self.flush()

    def writelines(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending, self._size = [], 0
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending, self._size = [], 0
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._size + self._transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class WaitingConnections:
    """A server's connections waiting for a request head (keep-alive ones too), oldest
    first: those closed first when the server is full."""

    def __init__(self) -> None:
        self._order: dict[HeadTimeoutProtocol, None] = {}

    def add(self, connection: HeadTimeoutProtocol) -> None:
        self._order.pop(connection, None)
        self._order[connection] = None

    def discard(self, connection: HeadTimeoutProtocol) -> None:
        self._order.pop(connection, None)

    def oldest(self) -> HeadTimeoutProtocol | None:
        return next(iter(self._order), None)


class HeadTimeoutProtocol(HttpToolsProtocol):
    """HTTP/1.1 that gives each request head ``head_timeout`` seconds from its first byte,
    and keeps at most ``max_connections`` connections and requests in flight.

    uvicorn's ``limit_concurrency`` counts connections that have not sent a request: a
    client holding many of them open would have every request answered 503. Here a new
    connection past the limit closes the oldest one still waiting for a request head, and
    a request is refused only when ``max_connections`` requests are in flight, with the
    gateway's own JSON 503. Open WebSockets are not counted (``sockets`` counts them against
    caps of their own), and probes (``/healthz``, ``/readyz``, ``/metrics``) have
    ``PROBE_RESERVE`` more places: a full server still says how it is.
    """

    head_timeout = 10.0
    max_connections = 1000
    keep_alive_hint = b"timeout=4"  # the Keep-Alive header: see keep_alive_hint()
    metrics: Metrics | None = None
    waiting: WaitingConnections  # one per server, set by uvicorn_config
    sockets: OpenSockets | None = None  # the app's, set by uvicorn_config

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._served = self.app

    def _open_sockets(self) -> int:
        return 0 if self.sockets is None else self.sockets.total

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescedWrites(transport, self.loop))  # type: ignore[arg-type]
        self._arm()
        self.waiting.add(self)
        while len(self.connections) - self._open_sockets() > self.max_connections:
            oldest = self.waiting.oldest()
            if oldest is None or oldest is self:
                break
            oldest._close("idle_closed")

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self._waiting_for_head():
            self._arm()
        super().data_received(data)
        if not self._waiting_for_head():
            self._disarm()
            self.waiting.discard(self)

    def on_headers_complete(self) -> None:
        in_flight = len(self.tasks) - self._open_sockets()
        limit = self.max_connections
        if self.url.partition(b"?")[0] in PROBES:
            limit += PROBE_RESERVE
        is_busy = in_flight >= limit
        if is_busy and not (self.parser.should_upgrade() and self._should_upgrade()):
            self._count("busy")
        self.app = busy if is_busy else self._served  # what uvicorn runs for this request
        super().on_headers_complete()
        if self.cycle is not None and not self.cycle.response_started:  # not an upgrade
            # The request's ASGI task has not run yet: the send it calls is this one.
            self.cycle.send = self._hinting(self.cycle)  # type: ignore[method-assign,assignment]

    def _hinting(self, cycle: RequestResponseCycle) -> Callable[[Any], Awaitable[None]]:
        """``cycle.send``, telling the client of a connection kept open when it closes it."""
        send = cycle.send

        async def hinting(message: Any) -> None:
            if message["type"] == "http.response.start" and cycle.keep_alive:
                headers = list(message.get("headers", ()))
                if not any(
                    name.lower() == b"connection" and b"close" in value.lower()
                    for name, value in headers
                ):
                    headers.append((b"keep-alive", self.keep_alive_hint))
                    message = {**message, "headers": headers}
            await send(message)

        return hinting

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._waiting_for_head() and not self.transport.is_closing():
            self.waiting.add(self)

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the head is complete; the socket may then stay open for hours
        self.waiting.discard(self)
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.waiting.discard(self)
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self._close("head_timeout")

    def _close(self, reason: str) -> None:
        self._disarm()
        self.waiting.discard(self)
        self.connections.discard(self)  # at once: a request arriving meanwhile sees room
        self.transport.close()
        self._count(reason)

    def _count(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.refused.labels(reason).inc()


async def busy(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a request past ``server.max_connections``: uvicorn's own is text."""
    error = server_error(
        503,
        "The gateway is at its limit of requests in flight (server.max_connections). "
        "Try again shortly.",
        "server_busy",
        RETRY_AFTER_SECONDS,
    )
    await error_response(error)(scope, receive, send)


PROBES = frozenset({b"/healthz", b"/readyz", b"/metrics"})
PROBE_RESERVE = 16  # probes in flight past server.max_connections


class QuerylessPaths(logging.Filter):
    """Cuts the query string off the paths uvicorn logs (``"WebSocket /v1/responses"``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def _without_query(arg: object) -> object:
    if isinstance(arg, str) and arg.startswith("/") and "?" in arg:
        return arg.partition("?")[0]
    return arg


def hide_query_strings(logger: logging.Logger) -> None:
    """Keep query strings out of ``logger``'s lines, once however often it is called."""
    if not any(isinstance(each, QuerylessPaths) for each in logger.filters):
        logger.addFilter(QuerylessPaths())


# Time for streams cut at the end of the grace period to store their failure and send it.
_FAILURE_FLUSH_SECONDS = 5


class DenyingWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, done with a refused upgrade once its answer is sent.

    uvicorn sends an app's HTTP answer to an upgrade (a 401 for a missing key) but then
    logs an error for a handshake it thinks was never completed.
    """

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body"):
            self.handshake_complete = True


class StartupFailed(Exception):
    """The server stopped before serving. ``cause`` is why: the app's start-up error or the
    listening socket's; ``None`` when uvicorn logged why itself."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(str(cause) if cause is not None else "the server did not start")
        self.cause = cause


class StartupWatch:
    """The app, keeping the exception that ends its start-up in ``error``: uvicorn is told
    of the failure without the traceback it would log, and the caller says why in a line.
    A server stopped at once (a second Ctrl-C) cancels the app's lifespan instead of
    shutting it down: that is no failure to log either."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.error: BaseException | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "lifespan.startup.failed":
                return  # sent below, without the traceback it carries
            if message["type"] == "lifespan.shutdown.failed" and _cancelled():
                return
            started = started or message["type"] == "lifespan.startup.complete"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except asyncio.CancelledError:
            if not started:
                raise
        except Exception as error:
            if started:
                raise
            self.error = error
            await send({"type": "lifespan.startup.failed", "message": ""})


def _cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class UvicornName(logging.Filter):
    """Names uvicorn's lines ``uvicorn``: it logs them all as ``uvicorn.error``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.name = "uvicorn"
        return True


def name_uvicorn_lines(logger: logging.Logger) -> None:
    """Name ``logger``'s lines ``uvicorn``, once however often it is called."""
    if not any(isinstance(each, UvicornName) for each in logger.filters):
        logger.addFilter(UvicornName())


class GatewayServer(uvicorn.Server):
    """uvicorn, plus a shutdown that ends streamed turns while their clients still listen.

    uvicorn waits for open responses, then cuts them; the gateway's streams are told to
    finish at the same moment, so that past the grace period each client still receives
    its ``response.failed`` before the connection closes. SIGINT stops it as SIGTERM does
    (a second SIGINT at once), and either ends the process normally: uvicorn would raise
    the signal again once stopped, a ``KeyboardInterrupt`` traceback for SIGINT.
    ``on_started`` is given the port once the server listens.
    """

    def __init__(
        self,
        config: GatewayConfig,
        log_level: str = "info",
        on_started: Callable[[int], None] | None = None,
    ) -> None:
        self.app = create_app(config)
        self.watched = StartupWatch(self.app)
        self.grace = config.server.shutdown_grace_seconds
        self.on_started = on_started
        uvicorn_logger = logging.getLogger("uvicorn.error")
        hide_query_strings(uvicorn_logger)
        name_uvicorn_lines(uvicorn_logger)
        super().__init__(uvicorn_config(config, self.app, log_level, served=self.watched))

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        except SystemExit:  # uvicorn's way out when the app's start-up or the socket fails
            raise StartupFailed(self.watched.error) from None
        # The turn cache keeps many long-lived objects, which every full collection walks:
        # collect young objects less often, and leave what start-up made out of it.
        gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 100)
        gc.freeze()
        if self.on_started is not None:
            self.on_started(self.servers[0].sockets[0].getsockname()[1])

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        service = getattr(self.app.state, "service", None)
        finishing = None
        if service is not None:
            finishing = asyncio.create_task(service.streams.finish(self.grace))
        await super().shutdown(sockets)
        if service is not None and finishing is not None:
            if self.force_exit:  # a second SIGINT: the streams left fail now
                await service.streams.finish(0)
            await finishing


def keep_alive_hint(keep_alive_seconds: int) -> bytes:
    """The ``Keep-Alive`` header of a connection kept open: a second less than the server
    waits, so that a client that reads it closes an idle connection before the server does
    and never sends a request on a connection being closed."""
    return f"timeout={keep_alive_seconds - 1}".encode()


def uvicorn_config(
    config: GatewayConfig, app: Starlette, log_level: str = "info", served: ASGIApp | None = None
) -> uvicorn.Config:
    """The uvicorn settings ``server:`` asks for, around ``app`` (served as ``served``, a
    wrapper of it, if given)."""
    settings = config.server
    protocol = type(
        "GatewayHTTPProtocol",
        (HeadTimeoutProtocol,),
        {
            "head_timeout": settings.header_timeout_seconds,
            "max_connections": settings.max_connections,
            "keep_alive_hint": keep_alive_hint(settings.keep_alive_seconds),
            "metrics": app.state.metrics,
            "waiting": WaitingConnections(),
            "sockets": app.state.sockets,
        },
    )
    return uvicorn.Config(
        served or app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        log_config=None,  # the root logger's handler formats uvicorn's lines too
        http=protocol,
        ws=DenyingWebSocketProtocol,
        loop="uvloop",
        access_log=False,  # the app logs each request itself (ObserveMiddleware)
        timeout_keep_alive=settings.keep_alive_seconds,
        limit_concurrency=None,  # the protocol keeps server.max_connections itself
        timeout_graceful_shutdown=settings.shutdown_grace_seconds + _FAILURE_FLUSH_SECONDS,
    )
