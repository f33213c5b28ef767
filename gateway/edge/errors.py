"""Every error as the HTTP answer a client gets: the one place that maps the session
store's and the upstreams' domain errors to statuses and OpenAI-shaped bodies."""

from __future__ import annotations

from session import (
    ChainError,
    ConversationNotFound,
    InvalidCursor,
    InvalidData,
    ItemConflict,
    ItemNotFound,
    ResponseNotFound,
    SaveConflict,
    SessionError,
    StoreUnavailable,
)
from session.files import FileObjectNotFound

from ..errors import APIError, invalid_request, not_found, server_error
from ..upstream.errors import (
    UnsupportedInput,
    UpstreamAuthFailed,
    UpstreamBusy,
    UpstreamError,
    UpstreamInvalidResponse,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
)
from .json_response import JSONResponse

RETRY_AFTER_SECONDS = "1"


def error_response(error: APIError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def from_session_error(error: SessionError) -> APIError:
    """The HTTP form of a store error met outside chain resolution."""
    if isinstance(error, ResponseNotFound | ConversationNotFound | ItemNotFound):
        return not_found(error.message, code=error.code)
    if isinstance(error, FileObjectNotFound):
        return not_found(error.message, param=error.param, code=error.code)
    if isinstance(error, ItemConflict):
        return APIError(409, error.message, param="items", code=error.code)
    if isinstance(error, InvalidCursor):
        return invalid_request(error.message, param=error.param, code=error.code)
    if isinstance(error, InvalidData):
        return invalid_request(error.message, code=error.code)
    if isinstance(error, SaveConflict):
        return APIError(409, error.message, code=error.code)
    if isinstance(error, StoreUnavailable):
        return server_error(503, error.message, error.code, RETRY_AFTER_SECONDS)
    if isinstance(error, ChainError):
        return invalid_request(error.message, param="previous_response_id", code=error.code)
    return server_error(500, "The session store failed.", error.code)


def from_upstream_error(error: UpstreamError | UnsupportedInput) -> APIError:
    """The HTTP form of a provider failure met before any byte reached the client."""
    if isinstance(error, UnsupportedInput):
        return invalid_request(str(error), param=error.param, code="unsupported_input")
    if isinstance(error, UpstreamTimeout):
        return server_error(504, error.message, "upstream_timeout")
    if isinstance(error, UpstreamBusy):
        return server_error(503, error.message, "upstream_busy", RETRY_AFTER_SECONDS)
    if isinstance(error, UpstreamAuthFailed):
        return server_error(502, error.message, "upstream_auth_failed")
    if isinstance(error, UpstreamInvalidResponse):
        return server_error(502, error.message, "upstream_invalid_response")
    if isinstance(error, UpstreamUnreachable):
        return server_error(502, error.message, "upstream_unreachable")
    if isinstance(error, UpstreamRejected):
        headers = {"Retry-After": error.retry_after} if error.retry_after else None
        if error.status == 429:
            return APIError(
                429,
                error.message,
                type=error.type or "rate_limit_error",
                code=error.code or "rate_limit_exceeded",
                headers=headers,
            )
        if error.status == 503:
            return server_error(503, error.message, "upstream_unavailable", error.retry_after)
        if error.status == 529:  # Anthropic's "overloaded": worth trying again shortly
            retry_after = error.retry_after or RETRY_AFTER_SECONDS
            return server_error(503, error.message, "upstream_overloaded", retry_after)
        if error.status >= 500:
            return server_error(502, error.message, "upstream_error")
        return APIError(
            error.status,
            error.message,
            type=error.type or "invalid_request_error",
            code=error.code or "upstream_rejected",
        )
    return server_error(502, error.message, "upstream_error")
