"""The agent Store's one error type, with a stable ``code`` and the HTTP status it maps to."""

from __future__ import annotations

from typing import Any

STATUS = {
    "NotFound": 404,
    "BadRequest": 400,
    "Conflict": 409,
    "TooManyRequests": 429,
    "Unauthorized": 401,
    "Forbidden": 403,
    "Unavailable": 503,
    "TimeoutError": 504,
    "NetworkError": 502,
    "UnknownError": 500,
}


class StoreError(Exception):
    """``code`` is one of :data:`STATUS`; ``param`` the argument or field at fault, when one
    is; ``error`` the underlying detail, when there is one."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        error: Any = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else STATUS.get(code)
        self.error = error
        self.param = param

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "status": self.status,
            "message": self.message,
            "param": self.param,
            "error": self.error,
        }


def not_found(what: str) -> StoreError:
    return StoreError("NotFound", f"{what} not found.")


def bad_request(message: str, param: str | None = None) -> StoreError:
    return StoreError("BadRequest", message, param=param)


def conflict(message: str) -> StoreError:
    return StoreError("Conflict", message)
