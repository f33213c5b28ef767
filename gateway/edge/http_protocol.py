"""The HTTP/1.1 connection the gateway serves, bounded: a request head within its time,
at most ``server.max_connections`` requests in flight (probes kept a reserve), the oldest
connection still waiting for a request closed first when full, the writes of one step of
the loop joined, and a ``Keep-Alive`` hint so that clients close idle connections first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from ..errors import server_error
from ..observability.metrics import Metrics
from .errors import RETRY_AFTER_SECONDS, error_response
from .socket_limits import OpenSockets

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


def keep_alive_hint(keep_alive_seconds: int) -> bytes:
    """The ``Keep-Alive`` header of a connection kept open: a second less than the server
    waits, so that a client that reads it closes an idle connection before the server does
    and never sends a request on a connection being closed."""
    return f"timeout={keep_alive_seconds - 1}".encode()
