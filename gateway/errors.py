"""Errors returned to clients, always as ``{"error": {"message", "type", "param", "code"}}``.

Session and upstream errors are domain errors; this module alone maps them to HTTP.
"""

from __future__ import annotations

from typing import Any

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

from .edge.json_response import JSONResponse
from .upstream.errors import (
    UnsupportedInput,
    UpstreamAuthFailed,
    UpstreamBusy,
    UpstreamError,
    UpstreamInvalidResponse,
    UpstreamRejected,
    UpstreamTimeout,
    UpstreamUnreachable,
)

RETRY_AFTER_SECONDS = "1"


class APIError(Exception):
    """An error with the HTTP status and OpenAI fields it is reported with."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def invalid_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def not_found(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(404, message, param=param, code=code)


def server_error(status: int, message: str, code: str, retry_after: str | None = None) -> APIError:
    headers = {"Retry-After": retry_after} if retry_after else None
    return APIError(status, message, type="server_error", code=code, headers=headers)


def from_session_error(error: SessionError) -> APIError:
    """The HTTP form of a store error met outside chain resolution."""
    if isinstance(error, ResponseNotFound | ConversationNotFound | ItemNotFound):
        return not_found(error.message, code=error.code)
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


def previous_response_error(error: SessionError) -> APIError:
    """The HTTP form of a failure to resolve ``previous_response_id``."""
    if isinstance(error, ResponseNotFound):
        return invalid_request(
            f"Previous response with id '{error.response_id}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return from_session_error(error)


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
        if error.status >= 500:
            return server_error(502, error.message, "upstream_error")
        return APIError(
            error.status,
            error.message,
            type=error.type or "invalid_request_error",
            code=error.code or "upstream_rejected",
        )
    return server_error(502, error.message, "upstream_error")
