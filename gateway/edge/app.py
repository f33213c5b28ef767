"""The application factory: config in, Starlette app out; nothing happens at import."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import WebSocketRoute

from session import SessionError, SessionStore, build_store
from session.agent_store import StoreError
from session.redis_shared import RedisSharedLimits
from session.shared import SharedLimits

from ..config import GatewayConfig
from ..errors import APIError
from ..observability.measured_store import measured
from ..observability.metrics import Metrics
from ..observability.pool_metrics import PoolCollector
from ..sealing import Sealer
from ..tracing import NO_TRACER, start_tracing
from ..turn.file_services import file_services
from ..turn.service import ResponsesService
from ..turn.spending import Spending
from ..turn.upkeep import fail_stale_turns, keep_alive, prune_expired
from ..upstream import ProviderClient, UnsupportedInput, UpstreamError
from ..upstream.transport.addresses import Resolver, SystemResolver
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

SWEEP_INTERVAL_SECONDS = 60.0
UPKEEP_STOP_SECONDS = 5.0  # for a sweep's store operation under way at shutdown


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


async def _ended(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for upkeep told to stop to finish its store operation; cut it past a bound."""
    _, running = await asyncio.wait(tasks, timeout=UPKEEP_STOP_SECONDS)
    for task in running:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@asynccontextmanager
async def shared_limits(config: GatewayConfig, store: SessionStore) -> AsyncIterator[SharedLimits]:
    """Where instances share rate limits, spend and cooldowns: Redis when
    ``routing.redis_url`` is set, else the session store itself."""
    if config.routing.redis_url is None:
        yield store
        return
    redis = RedisSharedLimits(config.routing.redis_url)
    try:
        yield redis
    finally:
        await redis.close()


def create_app(
    config: GatewayConfig,
    *,
    store: SessionStore | None = None,
    resolver: Resolver | None = None,
) -> Starlette:
    """Build the gateway; the store, HTTP clients and upkeep run in the app's lifespan.

    ``store`` replaces the configured backend (the caller then owns and closes it).
    ``resolver`` answers the names of the servers clients ask the gateway to reach (their
    MCP servers); by default the operating system's.
    """

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            opened = store
            if opened is None:
                opened = build_store(config.session)
                stack.push_async_callback(opened.close)
            clients = {
                name: await stack.enter_async_context(ProviderClient.connect(name, provider))
                for name, provider in config.providers.items()
                if provider.wire.http
            }
            pools = PoolCollector(clients)
            metrics.registry.register(pools)
            stack.callback(metrics.registry.unregister, pools)
            tracing = start_tracing(config.observability)
            stack.push_async_callback(tracing.shutdown)  # after the turns have finished
            app.state.tracer = tracing.tracer
            measured_store = measured(opened, metrics, tracing.tracer)
            secret = config.compaction.secret or await measured_store.shared_secret(
                "compaction", secrets.token_urlsafe(32)
            )
            shared = await stack.enter_async_context(shared_limits(config, measured_store))
            spending = Spending(shared)
            sealer = Sealer(secret)
            service = ResponsesService(
                measured_store,
                config,
                clients,
                metrics,
                sealer,
                shared,
                spending,
                resolver or SystemResolver(),
                tracer=tracing.tracer,
            )
            app.state.console_sessions = ConsoleSessions(
                sealer, shared, config.auth.console_session_seconds
            )
            app.state.service = service
            app.state.files = await stack.enter_async_context(
                file_services(
                    config, opened, clients, shared, spending, config.server.shutdown_grace_seconds
                )
            )
            service.files = app.state.files
            app.state.authenticator = Authenticator(
                config.auth, measured_store, shared, spending=spending
            )
            stop_upkeep = asyncio.Event()
            upkeep = [
                asyncio.create_task(
                    fail_stale_turns(
                        measured_store,
                        config.stale_after_seconds(),
                        config.session.stream_events_seconds,
                        SWEEP_INTERVAL_SECONDS,
                        stop_upkeep,
                    )
                ),
                asyncio.create_task(
                    keep_alive(
                        measured_store,
                        service.instance_id,
                        config.server.heartbeat_seconds,
                        config.server.heartbeat_timeout_seconds,
                        stop_upkeep,
                    )
                ),
            ]
            if (retention := config.session.retention) is not None:
                sweep_every = config.session.retention_sweep_seconds
                upkeep.append(
                    asyncio.create_task(
                        prune_expired(measured_store, retention, sweep_every, stop_upkeep)
                    )
                )
            try:
                yield
            finally:
                stop_upkeep.set()
                grace = config.server.shutdown_grace_seconds
                await asyncio.gather(
                    service.streams.finish(grace), service.background.finish(grace)
                )
                await _ended(upkeep)

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
