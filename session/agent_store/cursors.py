"""Paging cursors of the agent Store: opaque to clients and signed, so that a forged or
altered cursor is refused before anything it holds reaches the database.

A cursor is ``<position>.<signature>``: the position is base64url JSON, the signature an
HMAC-SHA256 over it and its scope (the listing, the project and, for messages, the
conversation and order), so a cursor serves only the listing that gave it out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import StoreError, bad_request
from .values import BIGINT_MAX, MAX_ID_BYTES, json_text

SECRET_NAME = "agent_store_cursors"
MAX_CURSOR_CHARS = 1024
MAX_TIME = 1e11  # seconds since the epoch: past the year 5000
SIGNATURE_BYTES = 18

Position = TypeVar("Position", bound=BaseModel)


class _Position(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ConversationPosition(_Position):
    """The last conversation of a page: its stored ``updated_at`` and its id."""

    t: float = Field(ge=0, le=MAX_TIME, allow_inf_nan=False)
    i: str = Field(min_length=1, max_length=MAX_ID_BYTES)


class MessagePosition(_Position):
    """The last ``seq`` of a page (``a``) and the highest any page shows (``u``)."""

    a: int = Field(ge=0, le=BIGINT_MAX)
    u: int = Field(ge=0, le=BIGINT_MAX)


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _invalid() -> StoreError:
    return bad_request("Invalid 'cursor': it is not one this store gave out.", "cursor")


class Cursors:
    """Seals positions into cursors and opens them again, under one key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _signature(self, scope: list[str], body: str) -> str:
        message = f"{json_text(scope)}\n{body}".encode()
        return _encode(hmac.new(self._key, message, hashlib.sha256).digest()[:SIGNATURE_BYTES])

    def seal(self, scope: list[str], position: BaseModel) -> str:
        body = _encode(position.model_dump_json().encode())
        return f"{body}.{self._signature(scope, body)}"

    def open(self, scope: list[str], cursor: str, model: type[Position]) -> Position:
        """The position ``cursor`` holds; BadRequest unless this store sealed it for ``scope``."""
        if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS or not cursor.isascii():
            raise _invalid()
        body, _, signature = cursor.partition(".")
        if not hmac.compare_digest(signature, self._signature(scope, body)):
            raise _invalid()
        try:
            decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            return model.model_validate_json(decoded)
        except (ValueError, ValidationError):
            raise _invalid() from None


class CursorKey:
    """The key a store's cursors are signed with, derived from a secret kept in the store
    itself: every instance sharing the database reads the others' cursors."""

    def __init__(self, shared_secret: Callable[[str, str], Awaitable[str]]) -> None:
        self._shared_secret = shared_secret
        self._cursors: Cursors | None = None

    async def cursors(self) -> Cursors:
        if self._cursors is None:
            secret = await self._shared_secret(SECRET_NAME, secrets.token_urlsafe(32))
            key = hashlib.sha256(f"agent store cursors\n{secret}".encode()).digest()
            self._cursors = Cursors(key)
        return self._cursors
