"""Each request's id, its metrics and its access log line.

The line is built only when ``gateway.access`` logs at INFO (uvicorn's own access log,
whose formatter cost about a tenth of the gateway's CPU per turn, is off).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...observability.metrics import Metrics
from ...observability.request_log import CURRENT_REQUEST, AccessLine, RequestLog, request_id_of

logger = logging.getLogger("gateway.access")

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


class ObserveMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.metrics = metrics
        self.templates: dict[object, str] = {
            route.endpoint: route.path for route in routes if isinstance(route, Route)
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        log = RequestLog(request_id_of(_client_request_id(scope)))
        id_header = (b"x-request-id", log.request_id.encode())
        token = CURRENT_REQUEST.set(log)
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", ()), id_header]
                if log.upstream is not None:
                    headers.append((b"x-gateway-upstream", log.upstream.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - start
            route = self.templates.get(scope.get("endpoint"), "unmatched")
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.request_seconds.labels(route, method).observe(elapsed)
            if logger.isEnabledFor(logging.INFO):
                log.project = log.project or scope.get("state", {}).get("project")
                client = (scope.get("client") or ("-",))[0]
                line = AccessLine(client, scope["method"], scope["path"], status, elapsed, log)
                logger.info(line)  # while the request id is current
            CURRENT_REQUEST.reset(token)

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket's id is its upgrade request's: every turn on it is stored with it
        (and with its key), and the accept (or refusal) carries it back."""
        log = RequestLog(request_id_of(_client_request_id(scope)))
        id_header = (b"x-request-id", log.request_id.encode())

        async def send_with_id(message: Message) -> None:
            if message["type"] in ("websocket.accept", "websocket.http.response.start"):
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            await send(message)

        token = CURRENT_REQUEST.set(log)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            CURRENT_REQUEST.reset(token)


def _client_request_id(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            return bytes(value)
    return None
