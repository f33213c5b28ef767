"""Helpers every route uses: the service, the project, body limits and query params."""

from __future__ import annotations

from starlette.requests import Request

from ..errors import APIError, invalid_request
from ..pipeline import ResponsesService

DEFAULT_PROJECT = "default"


def service(request: Request) -> ResponsesService:
    found: ResponsesService = request.app.state.service
    return found


def project(request: Request) -> str:
    """The tenant a request acts for (one project until API keys arrive)."""
    return DEFAULT_PROJECT


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or a 413 once it is larger than ``limit`` bytes."""
    too_large = APIError(
        413,
        f"The request body is larger than the limit of {limit} bytes.",
        code="request_too_large",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.lstrip("-").isdigit() or not low <= int(raw) <= high:
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
