"""Errors on the Messages API routes, in Anthropic's shape:
``{"type": "error", "error": {"type", "message"}, "request_id"}``, with the status the
gateway gives the same error elsewhere (the middleware's refusals included)."""

from __future__ import annotations

import logging

from session import SessionError

from ..errors import APIError, server_error
from ..observability.request_log import CURRENT_REQUEST
from ..upstream.errors import UnsupportedInput, UpstreamError
from .errors import from_session_error, from_upstream_error
from .json_response import JSONResponse

logger = logging.getLogger(__name__)

MESSAGES_PATH = "/v1/messages"
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OVERLOADED_CODES = frozenset({"upstream_busy", "upstream_overloaded", "upstream_unavailable"})


def speaks_messages(path: str) -> bool:
    """Whether ``path`` is one of the Messages API's (whose errors are Anthropic's)."""
    return path == MESSAGES_PATH or path.startswith(MESSAGES_PATH + "/")


def error_type(error: APIError) -> str:
    """Anthropic's error type for the gateway's error."""
    if error.code in _OVERLOADED_CODES:
        return "overloaded_error"
    if error.status in _TYPES:
        return _TYPES[error.status]
    return "invalid_request_error" if error.status < 500 else "api_error"


def anthropic_error_response(error: APIError) -> JSONResponse:
    """``error`` as Anthropic reports one."""
    body: dict[str, object] = {
        "type": "error",
        "error": {"type": error_type(error), "message": error.message},
    }
    log = CURRENT_REQUEST.get()
    if log is not None:
        body["request_id"] = log.request_id
    return JSONResponse(body, status_code=error.status, headers=error.headers)


def as_api_error(error: Exception) -> APIError:
    """Any failure met before the answer began, as the gateway's :class:`APIError`."""
    if isinstance(error, APIError):
        return error
    if isinstance(error, SessionError):
        return from_session_error(error)
    if isinstance(error, UpstreamError | UnsupportedInput):
        return from_upstream_error(error)
    logger.error("unhandled error on /v1/messages", exc_info=error)
    return server_error(500, "The gateway failed to process the request.", "server_error")
