"""Conversation records and the append rule every backend shares."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .errors import ItemConflict
from .models import Item


class Conversation(BaseModel):
    """A named, ordered list of items, scoped to a project."""

    model_config = ConfigDict(extra="forbid")

    id: str
    project: str = "default"
    created_at: float = Field(default_factory=time.time)
    metadata: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class StoredConversation:
    """A conversation as kept: its record, and when its items last changed (the time
    retention goes by), which the record does not show."""

    conversation: Conversation
    updated_at: float


def conversation_from_row(
    project: str, conversation_id: str, created_at: float, metadata: str | dict[str, Any]
) -> Conversation:
    """A conversation from its row (``metadata`` as JSON text or already decoded)."""
    decoded = json.loads(metadata) if isinstance(metadata, str) else metadata
    return Conversation(
        id=conversation_id, project=project, created_at=created_at, metadata=decoded
    )


def fresh_items(batch: list[Item], existing: Mapping[str, Item]) -> list[Item]:
    """The items of a normalised ``batch`` to insert, given those stored under its ids.

    Appending an id stored with identical content is a no-op (a safe retry); with other
    content it raises :class:`ItemConflict`.
    """
    fresh: list[Item] = []
    for item in batch:
        stored = existing.get(item["id"])
        if stored is None:
            fresh.append(item)
        elif stored != item:
            raise ItemConflict(item["id"])
    return fresh
