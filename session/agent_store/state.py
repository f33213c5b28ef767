"""Per-conversation state and session bindings of the agent Store, as operations."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .sql import Operation, check_id, json_text, rows, run


def _where(project: str, conversation_id: str, key: str) -> tuple[str, str, str]:
    return project, check_id(conversation_id, "conversationId"), check_id(key, "key")


def state_get(project: str, conversation_id: str, key: str) -> Operation:
    where = _where(project, conversation_id, key)
    found = yield rows(
        "SELECT value FROM agent_state WHERE project = ? AND conversation_id = ? AND key = ?",
        *where,
    )
    return json.loads(found[0][0]) if found else None


def state_set(project: str, conversation_id: str, key: str, value: Any) -> Operation:
    where = _where(project, conversation_id, key)
    yield run(
        "INSERT INTO agent_state (project, conversation_id, key, value) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (project, conversation_id, key) DO UPDATE SET value = excluded.value",
        *where,
        json_text(value),
    )
    return None


def state_delete(project: str, conversation_id: str, key: str) -> Operation:
    where = _where(project, conversation_id, key)
    yield run(
        "DELETE FROM agent_state WHERE project = ? AND conversation_id = ? AND key = ?", *where
    )
    return None


def session_binding(project: str, conversation_id: str) -> Operation:
    """A stable UUID session id for ``conversation_id`` (a UUID is its own)."""
    check_id(conversation_id, "conversationId")
    try:
        return str(uuid.UUID(conversation_id))
    except ValueError:
        pass
    yield run(
        "INSERT INTO agent_bindings (project, conversation_id, session_id) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        project,
        conversation_id,
        str(uuid.uuid4()),
    )
    found = yield rows(
        "SELECT session_id FROM agent_bindings WHERE project = ? AND conversation_id = ?",
        project,
        conversation_id,
    )
    return str(found[0][0])
