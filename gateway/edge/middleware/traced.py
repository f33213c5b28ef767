"""Each request as a server span: a child of the client's ``traceparent`` when it sent one,
its own ``traceparent`` sent back. With tracing off it hands the request on untouched.

A WebSocket's span lasts as long as the socket; each turn on it starts a trace of its own
that links to it (:data:`gateway.tracing.SEPARATE_TRACES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.trace import Span, SpanKind
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...tracing import (
    NO_TRACER,
    SEPARATE_TRACES,
    Tracer,
    client_context,
    failed,
    traceparent,
)


class TraceMiddleware:
    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.templates: dict[object, str] = {
            route.endpoint: route.path for route in routes if isinstance(route, Route)
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tracer: Tracer = getattr(scope["app"].state, "tracer", NO_TRACER)
        if not tracer.enabled or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        socket = scope["type"] == "websocket"
        method = "GET" if socket else scope["method"]
        with tracer.span(
            method,
            kind=SpanKind.SERVER,
            context=client_context(scope["headers"]),
            attributes={
                "http.request.method": method,
                "url.path": scope["path"],
                "url.scheme": scope.get("scheme", "http"),
                "network.protocol.name": "websocket" if socket else "http",
            },
        ) as span:
            header = (b"traceparent", (traceparent(span) or "").encode())
            status = 0

            async def send_traced(message: Message) -> None:
                nonlocal status
                kind = message["type"]
                if kind in ("http.response.start", "websocket.accept"):
                    status = message.get("status", 101)
                    message = {**message, "headers": [*message.get("headers", ()), header]}
                elif kind == "websocket.http.response.start":
                    status = message["status"]
                await send(message)

            token = SEPARATE_TRACES.set(True) if socket else None
            try:
                await self.app(scope, receive, send_traced)
            finally:
                if token is not None:
                    SEPARATE_TRACES.reset(token)
                self._ended(span, scope, method, status)

    def _ended(self, span: Span, scope: Scope, method: str, status: int) -> None:
        route = self.templates.get(scope.get("endpoint"))
        if route is None and scope["type"] == "websocket":
            route = scope["path"]
        if route is not None:
            span.update_name(f"{method} {route}")
            span.set_attribute("http.route", route)
        if status:
            span.set_attribute("http.response.status_code", status)
            if status >= 500:
                failed(span, f"HTTP {status}", str(status))
