"""Per-conversation state and session bindings of the agent Store, as operations."""

from __future__ import annotations

import json
import uuid
from typing import Any

from ..sql import Operation, rows, run
from .values import check_id, json_text

_WHERE = "project = :project AND conversation_id = :conversation_id AND key = :key"


def _where(project: str, conversation_id: str, key: str) -> dict[str, str]:
    return {
        "project": project,
        "conversation_id": check_id(conversation_id, "conversationId"),
        "key": check_id(key, "key"),
    }


def state_get(project: str, conversation_id: str, key: str) -> Operation:
    where = _where(project, conversation_id, key)
    found = yield rows(f"SELECT value FROM agent_state WHERE {_WHERE}", **where)
    return json.loads(found[0][0]) if found else None


def state_set(project: str, conversation_id: str, key: str, value: Any) -> Operation:
    where = _where(project, conversation_id, key)
    yield run(
        "INSERT INTO agent_state (project, conversation_id, key, value)"
        " VALUES (:project, :conversation_id, :key, :value)"
        " ON CONFLICT (project, conversation_id, key) DO UPDATE SET value = excluded.value",
        **where,
        value=json_text(value),
    )
    return None


def state_delete(project: str, conversation_id: str, key: str) -> Operation:
    where = _where(project, conversation_id, key)
    yield run(f"DELETE FROM agent_state WHERE {_WHERE}", **where)
    return None


def session_binding(project: str, conversation_id: str) -> Operation:
    """A stable UUID session id for ``conversation_id`` (a UUID is its own)."""
    check_id(conversation_id, "conversationId")
    try:
        return str(uuid.UUID(conversation_id))
    except ValueError:
        pass
    yield run(
        "INSERT INTO agent_bindings (project, conversation_id, session_id)"
        " VALUES (:project, :conversation_id, :session_id) ON CONFLICT DO NOTHING",
        project=project,
        conversation_id=conversation_id,
        session_id=str(uuid.uuid4()),
    )
    found = yield rows(
        "SELECT session_id FROM agent_bindings"
        " WHERE project = :project AND conversation_id = :conversation_id",
        project=project,
        conversation_id=conversation_id,
    )
    return str(found[0][0])
