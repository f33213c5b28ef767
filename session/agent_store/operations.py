"""The agent Store's conversations, as operations (see :mod:`.sql`); messages are in
:mod:`.messages`."""

from __future__ import annotations

import json
from typing import Any

from ..ids import new_id
from ..sql import BYTEWISE, Operation, rows, run
from .cursors import ConversationPosition, Cursors
from .errors import bad_request, conflict, not_found
from .models import AgentConversation, Page
from .values import check_id, check_metadata, json_text

# -- conversations ---------------------------------------------------------------------


def get_conversation(project: str, conversation_id: str) -> Operation:
    check_id(conversation_id, "conversationId")
    found = yield rows(
        "SELECT c.metadata, c.created_at, c.updated_at, count(m.id), max(m.created_at)"
        " FROM agent_conversations c LEFT JOIN agent_messages m"
        " ON m.project = c.project AND m.conversation_id = c.id"
        " WHERE c.project = :project AND c.id = :id"
        " GROUP BY c.metadata, c.created_at, c.updated_at",
        project=project,
        id=conversation_id,
    )
    if not found:
        return None
    metadata, created, updated, count, last = found[0]
    return AgentConversation(
        conversation_id, json.loads(metadata), float(created), float(updated), int(count),
        None if last is None else float(last),
    )  # fmt: skip


def create_conversation(
    project: str, conversation_id: str | None, metadata: Any, now: float
) -> Operation:
    conversation_id = check_id(
        conversation_id if conversation_id is not None else new_id("conv"), "conversationId"
    )
    inserted = yield run(
        "INSERT INTO agent_conversations (project, id, metadata, created_at, updated_at,"
        " next_seq) VALUES (:project, :id, :metadata, :now, :now, 1) ON CONFLICT DO NOTHING",
        project=project,
        id=conversation_id,
        metadata=json_text(check_metadata(metadata)),
        now=now,
    )
    if inserted == 0:
        raise conflict(f"Conversation '{conversation_id}' already exists.")
    return (yield from get_conversation(project, conversation_id))


def list_conversations(project: str, limit: int, cursor: str | None, cursors: Cursors) -> Operation:
    """Most recently updated first; conversations updated in the same millisecond (as
    their ``updatedAt`` shows) by id, bytewise descending."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        raise bad_request("Invalid 'limit': an integer from 1 to 100.", "limit")
    scope = ["conversations", project]
    where, params = "c.project = :project", dict[str, Any](project=project)
    if cursor is not None:
        position = cursors.open(scope, cursor, ConversationPosition)
        where += (
            " AND (c.updated_at < :updated_at"
            f" OR (c.updated_at = :updated_at AND c.id {BYTEWISE} < :id))"
        )
        params.update(updated_at=position.t, id=position.i)
    found = yield rows(
        "SELECT c.id, c.metadata, c.created_at, c.updated_at, count(m.id), max(m.created_at)"
        " FROM agent_conversations c LEFT JOIN agent_messages m"
        " ON m.project = c.project AND m.conversation_id = c.id"
        f" WHERE {where} GROUP BY c.id, c.metadata, c.created_at, c.updated_at"
        f" ORDER BY c.updated_at DESC, c.id {BYTEWISE} DESC LIMIT :limit",
        **params,
        limit=limit + 1,
    )
    items = [
        AgentConversation(row[0], json.loads(row[1]), float(row[2]), float(row[3]), int(row[4]),
                     None if row[5] is None else float(row[5]))
        for row in found[:limit]
    ]  # fmt: skip
    last = items[-1] if len(found) > limit else None
    if last is None:
        return Page(items, None)
    position = ConversationPosition(t=last.updated_at, i=last.conversation_id)
    return Page(items, cursors.seal(scope, position))


def update_conversation(project: str, conversation_id: str, patch: Any, now: float) -> Operation:
    check_id(conversation_id, "conversationId")
    if not isinstance(patch, dict):
        raise bad_request("Invalid 'metadata': a JSON object.", "metadata")
    current = yield from get_conversation(project, conversation_id)
    if current is None:
        raise not_found(f"Conversation '{conversation_id}'")
    if not patch:
        return current
    merged = dict(current.metadata)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    yield run(
        "UPDATE agent_conversations SET metadata = :metadata, updated_at = :updated_at"
        " WHERE project = :project AND id = :id",
        metadata=json_text(merged),
        updated_at=later(now, current.updated_at),
        project=project,
        id=conversation_id,
    )
    return (yield from get_conversation(project, conversation_id))


def later(now: float, last: float) -> float:
    """``now``, or the millisecond after ``last`` if ``now`` is not past it: each change of
    a conversation moves its ``updatedAt`` on."""
    return max(now, (round(last * 1000) + 1) / 1000)


def touch(project: str, conversation_id: str, now: float) -> Operation:
    """Mark a conversation changed; ``None`` if there is none, else its ``updated_at``."""
    # Setting a column to itself first takes the row lock: concurrent writers take turns.
    found = yield rows(
        "UPDATE agent_conversations SET updated_at = updated_at"
        " WHERE project = :project AND id = :id RETURNING updated_at",
        project=project,
        id=conversation_id,
    )
    if not found:
        return None
    changed = later(now, float(found[0][0]))
    yield run(
        "UPDATE agent_conversations SET updated_at = :updated_at"
        " WHERE project = :project AND id = :id",
        updated_at=changed,
        project=project,
        id=conversation_id,
    )
    return changed


def delete_conversation(project: str, conversation_id: str) -> Operation:
    check_id(conversation_id, "conversationId")
    for table, column in (
        ("agent_messages", "conversation_id"),
        ("agent_state", "conversation_id"),
        ("agent_bindings", "conversation_id"),
        ("agent_conversations", "id"),
    ):
        yield run(
            f"DELETE FROM {table} WHERE project = :project AND {column} = :id",
            project=project,
            id=conversation_id,
        )
    return None
