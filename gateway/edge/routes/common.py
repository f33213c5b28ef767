"""Helpers every route uses: the service, the project, body limits and query params."""

from __future__ import annotations

import asyncio
import re

from starlette.requests import ClientDisconnect, Request

from ...errors import APIError, invalid_request
from ...observability.request_log import CURRENT_REQUEST
from ...turn.service import ResponsesService

DEFAULT_PROJECT = "default"
_INTEGER = re.compile(r"^-?[0-9]{1,9}$")


def service(request: Request) -> ResponsesService:
    found: ResponsesService = request.app.state.service
    return found


def project(request: Request) -> str:
    """The project a request acts for: its API key's, or ``default`` without keys."""
    found: str = request.scope.get("state", {}).get("project", DEFAULT_PROJECT)
    return found


def exchange_stored(request: Request, edge: str, asked: bool | None = None) -> bool:
    """Note that the request came in by ``edge`` (its stored turn says so) and whether
    its exchange is stored: unless the client said ``store: false`` or its key's project is
    one of ``auth.unstored_projects`` (then only its usage and cost are kept)."""
    log = CURRENT_REQUEST.get()
    if log is not None:
        log.edge = edge
    unstored = service(request).config.auth.unstored_projects
    return asked is not False and project(request) not in unstored


def _too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"The request body is larger than the limit of {limit} bytes.",
        code="request_too_large",
    )


async def read_body(request: Request) -> bytes:
    """The request body: a 413 once it passes ``max_body_bytes``, a 408 if it is too slow.

    Read from the ASGI messages directly: Starlette's ``stream()`` is an async generator,
    which costs each request a registration with the event loop.
    """
    settings = service(request).config.server
    limit = settings.max_body_bytes
    for name, value in request.scope["headers"]:
        if name == b"content-length":
            if value.isdigit() and int(value) > limit:
                raise _too_large(limit)
            break
    chunks: list[bytes] = []
    size = 0
    receive = request.receive
    try:
        async with asyncio.timeout(settings.body_timeout_seconds):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnect()
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise APIError(
            408,
            f"The request body did not arrive within {settings.body_timeout_seconds:g} seconds.",
            code="request_timeout",
        ) from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not _INTEGER.match(raw) or not low <= int(raw) <= high:
        raise invalid_request(
            f"Invalid '{name}': expected an integer from {low} to {high}, got {raw!r}.",
            param=name,
            code="invalid_value",
        )
    return int(raw)


def query_choice(request: Request, name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = request.query_params.get(name, default)
    if raw not in choices:
        raise invalid_request(
            f"Invalid '{name}': expected one of {', '.join(choices)}, got {raw!r}.",
            param=name,
            code="invalid_value",
        )
    return raw
