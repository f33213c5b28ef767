"""Conversations and messages of the agent Store, as its API returns them (camelCase JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def iso(timestamp: float | None) -> str | None:
    """ISO 8601 with milliseconds, in UTC."""
    if timestamp is None:
        return None
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class AgentConversation:
    conversation_id: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float
    message_count: int
    last_message_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "conversationId": self.conversation_id,
            "metadata": self.metadata,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
            "messageCount": self.message_count,
            "lastMessageAt": iso(self.last_message_at),
        }


@dataclass(frozen=True)
class Message:
    message_id: str
    conversation_id: str
    seq: int
    role: str | None
    type: str | None
    payload: Any
    metadata: dict[str, Any]
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "messageId": self.message_id,
            "conversationId": self.conversation_id,
            "seq": str(self.seq),
            "role": self.role,
            "type": self.type,
            "payload": self.payload,
            "metadata": self.metadata,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


@dataclass(frozen=True)
class Page:
    """One page of a listing; ``next_cursor`` is ``None`` on the last one."""

    items: list[Any]
    next_cursor: str | None

    def to_json(self) -> dict[str, Any]:
        return {"items": [item.to_json() for item in self.items], "nextCursor": self.next_cursor}


@dataclass(frozen=True)
class NewMessage:
    """A message to append: its payload and, optionally, its id, role, type and metadata."""

    payload: Any
    role: str | None = None
    type: str | None = None
    metadata: dict[str, Any] | None = None
    message_id: str | None = None
