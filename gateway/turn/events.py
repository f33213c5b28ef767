"""A streamed turn's events as they leave the turn: numbered, each encoded to JSON once.

Each edge frames them its own way (server-sent events over HTTP, a text frame each over a
WebSocket); the event log keeps their JSON as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from session import StoredResponse

from ..api.response_object import response_object

TERMINAL_EVENTS = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
    "cancelled": "response.failed",  # OpenAI has no event of its own for a cancelled stream
}
TERMINAL_TYPES = frozenset(TERMINAL_EVENTS.values())


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a stream: its type and its JSON, ``sequence_number`` included."""

    type: str
    data: bytes

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_TYPES


def numbered(event: dict[str, Any], number: int) -> StreamEvent:
    """``event`` as sent, with its ``sequence_number`` (set on it: each is sent once)."""
    event["sequence_number"] = number
    return StreamEvent(event["type"], orjson.dumps(event))


def terminal_event(record: StoredResponse, number: int, *, store: bool = True) -> StreamEvent:
    """The event that ends a stream, for a finished (or cancelled) record."""
    kind = TERMINAL_EVENTS[record.status]
    return numbered({"type": kind, "response": response_object(record, store=store)}, number)
