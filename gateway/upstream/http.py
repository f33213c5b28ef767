"""One exchange with a provider: deadlines, size caps, and failures as domain errors.

Secrets (the API key and every configured header value) never appear in an error
message or a log line, and relayed provider messages are cut to a readable length.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import orjson

from ..config import ProviderSettings
from .errors import (
    UpstreamAuthFailed,
    UpstreamBusy,
    UpstreamError,
    UpstreamInvalidResponse,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
)

logger = logging.getLogger("gateway.upstream")

MAX_RELAYED_MESSAGE = 1000
_ERROR_BODY_LIMIT = 64 * 1024


def scrub(text: str, settings: ProviderSettings) -> str:
    """``text`` without the provider's secrets, cut to :data:`MAX_RELAYED_MESSAGE`."""
    secrets = [settings.api_key or "", *settings.headers.values()]
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    if len(text) > MAX_RELAYED_MESSAGE:
        text = text[:MAX_RELAYED_MESSAGE] + "…"
    return text


def _error_fields(content: bytes) -> tuple[str, str | None, str | None]:
    """The message, type and code of an upstream error body, whatever its shape."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content.decode("utf-8", "replace"), None, None
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or orjson.dumps(error).decode()
        kind, code = error.get("type"), error.get("code")
        return (
            str(message),
            kind if isinstance(kind, str) else None,
            str(code) if isinstance(code, str | int) else None,
        )
    return str(error), None, None


def error_from_response(
    name: str, settings: ProviderSettings, response: httpx.Response, content: bytes
) -> Exception:
    status = response.status_code
    message, kind, code = _error_fields(content)
    message = scrub(message, settings)
    logger.warning("upstream %s answered HTTP %d", name, status)
    if status in (401, 403, 407):
        return UpstreamAuthFailed(
            name,
            f"The upstream provider '{name}' rejected the gateway's credentials (HTTP {status}).",
        )
    if status == 429:
        described = f"The upstream provider '{name}' is rate limiting requests: {message}"
    elif status >= 500:
        described = f"The upstream provider '{name}' failed (HTTP {status}): {message}"
    else:
        described = (
            f"The upstream provider '{name}' rejected the request (HTTP {status}): {message}"
        )
    return UpstreamRejected(
        name,
        described,
        status=status,
        type=kind,
        code=code,
        retry_after=response.headers.get("retry-after"),
    )


async def read_capped(response: httpx.Response, limit: int, name: str) -> bytes:
    """The whole body, or :class:`UpstreamInvalidResponse` once it passes ``limit`` bytes."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise UpstreamInvalidResponse(
                name, f"The answer from upstream provider '{name}' is larger than {limit} bytes."
            )
    return bytes(body)


@asynccontextmanager
async def _send(
    client: httpx.AsyncClient,
    name: str,
    settings: ProviderSettings,
    path: str,
    payload: dict[str, Any],
    read_timeout: float,
) -> AsyncIterator[httpx.Response]:
    """POST ``payload``; yield the open response once its status is a success."""
    headers = {**settings.headers, "Content-Type": "application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    timeout = httpx.Timeout(
        connect=settings.connect_timeout_seconds,
        read=read_timeout,
        write=settings.timeout_seconds,
        pool=settings.pool_timeout_seconds,
    )
    url = f"{(settings.base_url or '').rstrip('/')}{path}"
    request = client.build_request(
        "POST", url, content=orjson.dumps(payload), headers=headers, timeout=timeout
    )
    try:
        response = await client.send(request, stream=True)
    except httpx.PoolTimeout:
        logger.warning("upstream %s: connection pool full", name)
        raise UpstreamBusy(
            name, f"All connections to upstream provider '{name}' are busy; try again shortly."
        ) from None
    except httpx.TimeoutException:
        logger.warning("upstream %s timed out", name)
        raise UpstreamTimeout(
            name, f"The upstream provider '{name}' did not answer in time."
        ) from None
    except httpx.HTTPError as error:
        logger.warning("upstream %s unreachable: %s", name, type(error).__name__)
        raise UpstreamUnreachable(
            name, f"The upstream provider '{name}' could not be reached ({type(error).__name__})."
        ) from None
    try:
        if response.status_code >= 400:
            content = b""
            try:
                async for chunk in response.aiter_bytes():
                    content += chunk
                    if len(content) > _ERROR_BODY_LIMIT:
                        break
            except httpx.HTTPError:
                pass
            raise error_from_response(name, settings, response, content[:_ERROR_BODY_LIMIT])
        yield response
    finally:
        await response.aclose()


async def fetch_json(
    client: httpx.AsyncClient,
    name: str,
    settings: ProviderSettings,
    path: str,
    payload: dict[str, Any],
) -> dict[str, Any]:
    """A whole JSON object answer within ``timeout_seconds``, dripping bodies included."""
    try:
        async with asyncio.timeout(settings.timeout_seconds):
            async with _send(client, name, settings, path, payload, settings.timeout_seconds) as r:
                content = await read_capped(r, settings.max_response_bytes, name)
    except TimeoutError:
        logger.warning("upstream %s timed out", name)
        raise UpstreamTimeout(
            name, f"The upstream provider '{name}' did not answer in time."
        ) from None
    except httpx.TimeoutException:
        raise UpstreamTimeout(
            name, f"The upstream provider '{name}' did not answer in time."
        ) from None
    except httpx.HTTPError as error:
        raise UpstreamUnreachable(
            name, f"The answer from upstream provider '{name}' broke off ({type(error).__name__})."
        ) from None
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        raise UpstreamInvalidResponse(
            name,
            f"The upstream provider '{name}' answered with something other than a JSON object.",
        )
    return body


@asynccontextmanager
async def open_events(
    client: httpx.AsyncClient,
    name: str,
    settings: ProviderSettings,
    path: str,
    payload: dict[str, Any],
) -> AsyncIterator[AsyncIterator[str]]:
    """Start a streamed answer; yield the ``data`` of its server-sent events.

    Response headers must arrive within ``timeout_seconds``; then each chunk within
    ``stream_idle_timeout_seconds``; the stream may not pass ``max_response_bytes``.
    """
    async with AsyncExitStack() as stack:
        try:
            async with asyncio.timeout(settings.timeout_seconds):
                response = await stack.enter_async_context(
                    _send(
                        client, name, settings, path, payload, settings.stream_idle_timeout_seconds
                    )
                )
        except TimeoutError:
            raise UpstreamTimeout(
                name, f"The upstream provider '{name}' did not answer in time."
            ) from None
        yield sse_data(response, settings.max_response_bytes, name)


async def sse_data(response: httpx.Response, limit: int, name: str) -> AsyncIterator[str]:
    """The ``data`` of each complete server-sent event (an unterminated last one is dropped)."""
    size = 0
    data: list[str] = []
    async for line in response.aiter_lines():
        size += len(line) + 1
        if size > limit:
            raise UpstreamInvalidResponse(
                name, f"The answer from upstream provider '{name}' is larger than {limit} bytes."
            )
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)


def describe_stream_failure(name: str, error: BaseException) -> str:
    """The message recorded when an answer breaks after it started."""
    if isinstance(error, UpstreamError):
        return error.message
    if isinstance(error, httpx.TimeoutException):
        return f"The upstream provider '{name}' stopped answering mid-stream."
    return f"The answer from upstream provider '{name}' broke off ({type(error).__name__})."
