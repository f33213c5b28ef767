"""Errors a client is told of, as OpenAI reports them: ``{"error": {"message", "type",
"param", "code"}}`` with a status.

The gateway's own refusals are raised as :class:`APIError`; the session store's and the
upstreams' errors are domain errors of their own, which :mod:`gateway.edge.errors` maps.
"""

from __future__ import annotations

from typing import Any

from session import ResponseNotFound


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


def invalid_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def not_found(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(404, message, param=param, code=code)


def server_error(status: int, message: str, code: str, retry_after: str | None = None) -> APIError:
    headers = {"Retry-After": retry_after} if retry_after else None
    return APIError(status, message, type="server_error", code=code, headers=headers)


def previous_response_not_found(error: ResponseNotFound) -> APIError:
    """The answer to a ``previous_response_id`` (or one of its ancestors) not found."""
    return invalid_request(
        f"Previous response with id '{error.response_id}' not found.",
        param="previous_response_id",
        code="previous_response_not_found",
    )
