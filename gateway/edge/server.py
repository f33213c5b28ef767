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
import multiprocessing
import os
import signal
import socket
import tempfile
from collections.abc import Iterable
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..config import GatewayConfig
from ..observability.metrics import (
    MULTIPROCESS_ENV,
    Metrics,
    process_ended,
    share_between_processes,
)
from .app import create_app

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
    a request is refused only when ``max_connections`` requests are in flight.
    """

    head_timeout = 10.0
    max_connections = 1000
    metrics: Metrics | None = None
    waiting: WaitingConnections  # one per server, set by uvicorn_config

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescedWrites(transport, self.loop))  # type: ignore[arg-type]
        self._arm()
        self.waiting.add(self)
        while len(self.connections) > self.max_connections:
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
        busy = len(self.tasks) >= self.max_connections
        if busy and not (self.parser.should_upgrade() and self._should_upgrade()):
            self._count("busy")
        self.limit_concurrency = 0 if busy else None  # uvicorn answers 503 past its limit
        super().on_headers_complete()

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


class GatewayServer(uvicorn.Server):
    """uvicorn, plus a shutdown that ends streamed turns while their clients still listen.

    uvicorn waits for open responses, then cuts them; the gateway's streams are told to
    finish at the same moment, so that past the grace period each client still receives
    its ``response.failed`` before the connection closes.
    """

    def __init__(self, config: GatewayConfig, log_level: str = "info") -> None:
        self.app = create_app(config)
        self.grace = config.server.shutdown_grace_seconds
        hide_query_strings(logging.getLogger("uvicorn.error"))
        super().__init__(uvicorn_config(config, self.app, log_level))

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        # The turn cache keeps many long-lived objects, which every full collection walks:
        # collect young objects less often, and leave what start-up made out of it.
        gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 100)
        gc.freeze()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        service = getattr(self.app.state, "service", None)
        finishing = None
        if service is not None:
            finishing = asyncio.create_task(service.streams.finish(self.grace))
        await super().shutdown(sockets)
        if finishing is not None:
            await finishing


def uvicorn_config(
    config: GatewayConfig, app: Starlette, log_level: str = "info"
) -> uvicorn.Config:
    """The uvicorn settings ``server:`` asks for, around ``app``."""
    settings = config.server
    protocol = type(
        "GatewayHTTPProtocol",
        (HeadTimeoutProtocol,),
        {
            "head_timeout": settings.header_timeout_seconds,
            "max_connections": settings.max_connections,
            "metrics": app.state.metrics,
            "waiting": WaitingConnections(),
        },
    )
    return uvicorn.Config(
        app,
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


def _worker(config: GatewayConfig, log_level: str, sock: socket.socket) -> None:
    GatewayServer(config, log_level).run(sockets=[sock])


def serve(config: GatewayConfig, log_level: str = "info") -> None:
    """Serve in this process, or in ``server.workers`` processes sharing one socket.

    Workers are forked before anything else starts; each has its own event loop, store
    connections and upstream sessions, and they share the store's file or database.
    SIGTERM and SIGINT are passed on to every worker, which shut down as one would alone.
    Their metrics meet in ``PROMETHEUS_MULTIPROC_DIR`` (a temporary folder if unset).
    """
    workers = config.server.workers
    if workers <= 1:
        GatewayServer(config, log_level).run()
        return
    with tempfile.TemporaryDirectory(prefix="gateway-metrics-") as scratch:
        share_between_processes(os.environ.get(MULTIPROCESS_ENV) or scratch)
        _serve_workers(config, log_level, workers)


def _serve_workers(config: GatewayConfig, log_level: str, workers: int) -> None:
    family = socket.AF_INET6 if ":" in config.server.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((config.server.host, config.server.port))
    sock.listen(2048)
    sock.set_inheritable(True)
    context = multiprocessing.get_context("fork")
    processes = [
        context.Process(target=_worker, args=(config, log_level, sock), daemon=False)
        for _ in range(workers)
    ]
    for process in processes:
        process.start()

    def forward(signum: int, frame: FrameType | None) -> None:
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for process in processes:
        process.join()
        if process.pid is not None:
            process_ended(process.pid)
    sock.close()
