"""Errors returned to clients, always as ``{"error": {"message", "type", "param", "code"}}``."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from session import (
    ChainError,
    ConversationNotFound,
    InvalidCursor,
    ItemConflict,
    ItemNotFound,
    ResponseNotFound,
    SaveConflict,
    SessionError,
    StoreUnavailable,
)


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
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code

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
        return JSONResponse(self.body(), status_code=self.status)


def invalid_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def not_found(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(404, message, param=param, code=code)


def from_session_error(error: SessionError) -> APIError:
    """The HTTP form of a store error met outside chain resolution."""
    if isinstance(error, ResponseNotFound | ConversationNotFound | ItemNotFound):
        return not_found(error.message, code=error.code)
    if isinstance(error, ItemConflict):
        return APIError(409, error.message, param="items", code=error.code)
    if isinstance(error, InvalidCursor):
        return invalid_request(error.message, param=error.param, code=error.code)
    if isinstance(error, SaveConflict):
        return APIError(409, error.message, code=error.code)
    if isinstance(error, StoreUnavailable):
        return APIError(503, error.message, type="server_error", code=error.code)
    if isinstance(error, ChainError):
        return invalid_request(error.message, param="previous_response_id", code=error.code)
    return APIError(500, "The session store failed.", type="server_error", code=error.code)


def previous_response_error(error: SessionError) -> APIError:
    """The HTTP form of a failure to resolve ``previous_response_id``."""
    if isinstance(error, ResponseNotFound):
        return invalid_request(
            f"Previous response with id '{error.response_id}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return from_session_error(error)
