"""Sending one request to a provider, with its failures mapped to client-facing errors.

The provider's API key is sent in a header and never appears in an error or a log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from ..config import ProviderSettings
from ..errors import APIError

logger = logging.getLogger("gateway.upstream")


class UpstreamError(APIError):
    """A provider that failed, timed out, could not be reached or refused the gateway."""


def _scrub(text: str, settings: ProviderSettings) -> str:
    if settings.api_key:
        text = text.replace(settings.api_key, "***")
    return text


def _upstream_message(response: httpx.Response) -> tuple[str, str | None, str | None]:
    """The message, type and code of an upstream error body, whatever its shape."""
    try:
        body: Any = json.loads(response.content)
    except ValueError:
        return response.text[:500], None, None
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)[:500]
        return str(message), error.get("type"), error.get("code")
    return str(error)[:500], None, None


def error_from_response(
    name: str, settings: ProviderSettings, response: httpx.Response
) -> APIError:
    status = response.status_code
    message, kind, code = _upstream_message(response)
    message = _scrub(message, settings)
    logger.warning("upstream %s answered HTTP %d", name, status)
    if status in (401, 403, 407):
        return UpstreamError(
            502,
            f"The upstream provider '{name}' rejected the gateway's credentials (HTTP {status}).",
            type="server_error",
            code="upstream_auth_failed",
        )
    if status == 429:
        return UpstreamError(
            429,
            f"The upstream provider '{name}' is rate limiting requests: {message}",
            type=kind or "rate_limit_error",
            code=str(code) if code else "rate_limit_exceeded",
        )
    if status >= 500:
        return UpstreamError(
            502,
            f"The upstream provider '{name}' failed (HTTP {status}): {message}",
            type="server_error",
            code="upstream_error",
        )
    return UpstreamError(
        status,
        f"The upstream provider '{name}' rejected the request (HTTP {status}): {message}",
        type=kind or "invalid_request_error",
        code=str(code) if code else "upstream_rejected",
    )


@asynccontextmanager
async def post(
    client: httpx.AsyncClient,
    name: str,
    settings: ProviderSettings,
    path: str,
    payload: dict[str, Any],
) -> AsyncIterator[httpx.Response]:
    """POST ``payload`` and yield the open (streaming) response once its status is good."""
    headers = dict(settings.headers)
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    timeout = httpx.Timeout(settings.timeout_seconds, connect=settings.connect_timeout_seconds)
    url = f"{(settings.base_url or '').rstrip('/')}{path}"
    request = client.build_request("POST", url, json=payload, headers=headers, timeout=timeout)
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException:
        logger.warning("upstream %s timed out", name)
        raise UpstreamError(
            504,
            f"The upstream provider '{name}' did not answer in time.",
            type="server_error",
            code="upstream_timeout",
        ) from None
    except httpx.HTTPError as error:
        logger.warning("upstream %s unreachable: %s", name, type(error).__name__)
        raise UpstreamError(
            502,
            f"The upstream provider '{name}' could not be reached ({type(error).__name__}).",
            type="server_error",
            code="upstream_unreachable",
        ) from None
    try:
        if response.status_code >= 400:
            await response.aread()
            raise error_from_response(name, settings, response)
        yield response
    finally:
        await response.aclose()


class UpstreamStreamError(Exception):
    """An error the provider reported inside a stream that had already started."""


def describe_stream_failure(name: str, error: Exception) -> str:
    """The message recorded when an answer breaks after it started."""
    if isinstance(error, httpx.TimeoutException):
        return f"The upstream provider '{name}' stopped answering mid-stream."
    return f"The answer from upstream provider '{name}' broke off ({type(error).__name__})."
