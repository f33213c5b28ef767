"""The application factory: config in, Starlette app out; nothing happens at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import WebSocketRoute

from session import SessionError, SessionStore
from session.agent_store import StoreError

from ..config import GatewayConfig
from ..errors import APIError
from ..observability.metrics import Metrics
from ..tracing import NO_TRACER
from ..turn.runtime import Runtime
from ..upstream import UnsupportedInput, UpstreamError
from ..upstream.transport.addresses import Resolver
from .auth import Authenticator
from .console_access import ConsoleHeadersMiddleware
from .console_sessions import ConsoleSessions
from .errors import error_response, from_session_error, from_upstream_error
from .middleware import (
    AllowedHostsMiddleware,
    AllowedOriginsMiddleware,
    APIKeyMiddleware,
    JSONOnlyMiddleware,
    ObserveMiddleware,
    TraceMiddleware,
    UncaughtMiddleware,
)
from .routes import (
    agent_store,
    chat_completions,
    console,
    conversations,
    embeddings,
    files,
    messages,
    meta,
    responses,
    vector_store_files,
    vector_stores,
    websocket,
)
from .socket_limits import OpenSockets


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return error_response(exc)


async def _session_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SessionError)
    return error_response(from_session_error(exc))


async def _upstream_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, UpstreamError | UnsupportedInput)
    return error_response(from_upstream_error(exc))


async def _store_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StoreError)
    kind = "server_error" if (exc.status or 500) >= 500 else "invalid_request_error"
    error = APIError(exc.status or 500, exc.message, type=kind, param=exc.param, code=exc.code)
    return error_response(error)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = "not_found" if exc.status_code == 404 else None
    message = "Unknown endpoint." if exc.status_code == 404 else str(exc.detail)
    message = f"{message} ({request.method} {request.url.path})"
    return error_response(APIError(exc.status_code, message, code=code))


def create_app(
    config: GatewayConfig,
    *,
    store: SessionStore | None = None,
    resolver: Resolver | None = None,
) -> Starlette:
    """Build the gateway; its runtime (:class:`Runtime`: the store, HTTP clients, upkeep)
    runs in the app's lifespan.

    ``store`` replaces the configured backend (the caller then owns and closes it).
    ``resolver`` answers the names of the servers clients ask the gateway to reach (their
    MCP servers); by default the operating system's.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with Runtime.started(config, metrics, store=store, resolver=resolver) as runtime:
            app.state.tracer = runtime.tracer
            app.state.service = runtime.service
            app.state.files = runtime.files
            app.state.console_sessions = ConsoleSessions(
                runtime.sealer, runtime.shared, config.auth.console_session_seconds
            )
            app.state.authenticator = Authenticator(
                config.auth, runtime.store, runtime.shared, spending=runtime.spending
            )
            yield

    metrics = Metrics()
    routes = [
        *responses.routes,
        *messages.routes,
        WebSocketRoute("/v1/responses", websocket.responses_socket),
        *chat_completions.routes,
        *conversations.routes,
        *embeddings.routes,
        *files.routes,
        *vector_stores.routes,
        *vector_store_files.routes,
        *agent_store.routes,
        *meta.routes,
        *console.routes,
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(TraceMiddleware, routes=routes),
            Middleware(ObserveMiddleware, metrics=metrics, routes=routes),
            Middleware(UncaughtMiddleware),
            Middleware(ConsoleHeadersMiddleware),
            Middleware(AllowedHostsMiddleware, allowed=config.server.hosts_allowed()),
            Middleware(
                AllowedOriginsMiddleware,
                allowed=config.server.allowed_origins,
                keys=config.auth.mode == "keys",
            ),
            *([Middleware(APIKeyMiddleware)] if config.auth.mode == "keys" else []),
            Middleware(JSONOnlyMiddleware),
        ],
        exception_handlers={
            APIError: _api_error,
            SessionError: _session_error,
            StoreError: _store_error,
            UpstreamError: _upstream_error,
            UnsupportedInput: _upstream_error,
            HTTPException: _http_error,
        },
    )
    app.state.metrics = metrics
    app.state.tracer = NO_TRACER  # the lifespan's, once it runs
    app.state.sockets = OpenSockets(config.server, metrics)
    return app
