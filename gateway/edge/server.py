"""Serving the app with uvicorn, bounded: header, body, keep-alive and connection limits.

uvicorn closes idle keep-alive connections, but it waits forever for a request head that
arrives a byte at a time (slowloris), and counts connections that never send one against
``limit_concurrency``. Its protocol (:mod:`.http_protocol`) closes a connection whose
request head is not complete in time, and when full closes the oldest connection still
waiting for a head rather than refuse requests. uvicorn's lines name no query string: a
key may be in one.

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
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from ..config import GatewayConfig
from .app import create_app
from .http_protocol import HeadTimeoutProtocol, WaitingConnections, keep_alive_hint

GC_YOUNG_THRESHOLD = 50_000  # allocations between collections; CPython's default is 700


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
