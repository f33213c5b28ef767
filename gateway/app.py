"""The application factory: config in, Starlette app out; nothing happens at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from session import SessionError, build_store

from .config import GatewayConfig
from .errors import APIError, from_session_error
from .pipeline import ResponsesService
from .routes import conversations, meta, responses

logger = logging.getLogger("gateway")


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, APIError)
    return exc.response()


async def _session_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SessionError)
    return from_session_error(exc).response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = "not_found" if exc.status_code == 404 else None
    message = "Unknown endpoint." if exc.status_code == 404 else str(exc.detail)
    message = f"{message} ({request.method} {request.url.path})"
    return APIError(exc.status_code, message, code=code).response()


async def _unexpected(request: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    return APIError(
        500, "The gateway failed to process the request.", type="server_error"
    ).response()


def create_app(config: GatewayConfig) -> Starlette:
    """Build the gateway; the store and the HTTP client open in the app's lifespan."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = build_store(config.session)
        try:
            async with httpx.AsyncClient() as client:
                service = ResponsesService(store, config, client)
                app.state.service = service
                yield
                await service.wait_for_streams()
        finally:
            await store.close()

    return Starlette(
        routes=[*responses.routes, *conversations.routes, *meta.routes],
        lifespan=lifespan,
        exception_handlers={
            APIError: _api_error,
            SessionError: _session_error,
            HTTPException: _http_error,
            Exception: _unexpected,
        },
    )
