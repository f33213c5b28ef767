"""A ``POST /v1/messages`` body read and checked, its faults told as Anthropic words them:
``max_tokens: Field required``, ``messages.0.content: ...`` (the field's dotted path, then
what is wrong with it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from session import Item

from ...errors import APIError, invalid_request
from ..json_body import parse_json_object


class MessagesBody(BaseModel):
    """The fields of a Messages request the gateway reads; others are let through unread
    (``context_management``, ``service_tier``: the gateway decides those itself)."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    max_tokens: int = Field(ge=1)
    messages: list[Item]
    system: str | list[Item] | None = None
    metadata: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    tools: list[Item] | None = None
    tool_choice: Item | None = None
    thinking: Item | None = None
    output_format: Item | None = None
    output_config: Item | None = None
    mcp_servers: list[Item] | None = None


class CountTokensBody(MessagesBody):
    """A count_tokens body: a Messages request without ``max_tokens``."""

    max_tokens: int = Field(default=4096, ge=1)


def invalid(param: str, problem: str) -> APIError:
    """A 400 for ``param`` (a dotted path, ``messages.0.content``) in Anthropic's words."""
    return invalid_request(f"{param}: {problem}", param=param)


def parse_messages_body(raw: bytes, *, count: bool = False) -> MessagesBody:
    """Validate a Messages body (a 400 naming the bad field)."""
    try:
        body = (CountTokensBody if count else MessagesBody).model_validate(parse_json_object(raw))
    except ValidationError as error:
        first = error.errors()[0]
        param = ".".join(str(part) for part in first["loc"])
        raise invalid(param, first["msg"]) from None
    if not body.messages:
        raise invalid("messages", "at least one message is required")
    return body
