"""The agent Store's conversations and messages, as operations (see :mod:`.sql`)."""

from __future__ import annotations

import json
from typing import Any

from ..ids import new_id
from .errors import bad_request, conflict, not_found
from .models import Conversation, Message, NewMessage, Page
from .sql import (
    MAX_BATCH,
    MESSAGE_COLUMNS,
    Operation,
    check_id,
    check_metadata,
    cursor_of,
    json_text,
    message_of,
    position_of,
    rows,
    run,
)

# -- conversations ---------------------------------------------------------------------


def get_conversation(project: str, conversation_id: str) -> Operation:
    found = yield rows(
        "SELECT c.metadata, c.created_at, c.updated_at, count(m.id), max(m.created_at)"
        " FROM agent_conversations c LEFT JOIN agent_messages m"
        " ON m.project = c.project AND m.conversation_id = c.id"
        " WHERE c.project = ? AND c.id = ? GROUP BY c.metadata, c.created_at, c.updated_at",
        project,
        conversation_id,
    )
    if not found:
        return None
    metadata, created, updated, count, last = found[0]
    return Conversation(
        conversation_id, json.loads(metadata), float(created), float(updated), int(count),
        None if last is None else float(last),
    )  # fmt: skip


def create_conversation(
    project: str, conversation_id: str | None, metadata: Any, now: float
) -> Operation:
    conversation_id = conversation_id if conversation_id is not None else new_id("conv")
    check_id(conversation_id, "conversationId")
    inserted = yield run(
        "INSERT INTO agent_conversations (project, id, metadata, created_at, updated_at,"
        " next_seq) VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT DO NOTHING",
        project,
        conversation_id,
        json_text(check_metadata(metadata)),
        now,
        now,
    )
    if inserted == 0:
        raise conflict(f"Conversation '{conversation_id}' already exists.")
    return (yield from get_conversation(project, conversation_id))


def list_conversations(project: str, limit: int, cursor: str | None) -> Operation:
    if not 1 <= limit <= 100:
        raise bad_request("limit is from 1 to 100.")
    where, params = "c.project = ?", list[Any]([project])
    if cursor is not None:
        position = position_of(cursor)
        where += " AND (c.updated_at < ? OR (c.updated_at = ? AND c.id < ?))"
        params += [position.get("t"), position.get("t"), position.get("i")]
    found = yield rows(
        "SELECT c.id, c.metadata, c.created_at, c.updated_at, count(m.id), max(m.created_at)"
        " FROM agent_conversations c LEFT JOIN agent_messages m"
        " ON m.project = c.project AND m.conversation_id = c.id"
        f" WHERE {where} GROUP BY c.id, c.metadata, c.created_at, c.updated_at"
        " ORDER BY c.updated_at DESC, c.id DESC LIMIT ?",
        *params,
        limit + 1,
    )
    items = [
        Conversation(row[0], json.loads(row[1]), float(row[2]), float(row[3]), int(row[4]),
                     None if row[5] is None else float(row[5]))
        for row in found[:limit]
    ]  # fmt: skip
    last = items[-1] if len(found) > limit else None
    next_cursor = (
        None if last is None else cursor_of({"t": last.updated_at, "i": last.conversation_id})
    )
    return Page(items, next_cursor)


def update_conversation(project: str, conversation_id: str, patch: Any, now: float) -> Operation:
    if not isinstance(patch, dict):
        raise bad_request("metadata is a JSON object.")
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
        "UPDATE agent_conversations SET metadata = ?, updated_at = ? WHERE project = ? AND id = ?",
        json_text(merged),
        now,
        project,
        conversation_id,
    )
    return (yield from get_conversation(project, conversation_id))


def delete_conversation(project: str, conversation_id: str) -> Operation:
    for table, column in (
        ("agent_messages", "conversation_id"),
        ("agent_state", "conversation_id"),
        ("agent_bindings", "conversation_id"),
        ("agent_conversations", "id"),
    ):
        yield run(
            f"DELETE FROM {table} WHERE project = ? AND {column} = ?", project, conversation_id
        )
    return None


# -- messages --------------------------------------------------------------------------


def append_messages(
    project: str, conversation_id: str, batch: list[NewMessage], now: float
) -> Operation:
    """Append all or nothing; a batch already stored (same content) is returned as stored."""
    check_id(conversation_id, "conversationId")
    if not 1 <= len(batch) <= MAX_BATCH:
        raise bad_request(f"A batch holds 1 to {MAX_BATCH} messages.")
    ids = [message.message_id or new_id("msg") for message in batch]
    for message_id in ids:
        check_id(message_id, "messageId")
    if len(set(ids)) != len(ids):
        raise bad_request("The messages of a batch need distinct ids.")
    metadata = [check_metadata(message.metadata) for message in batch]
    stored = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = ?"
        f" AND id IN ({', '.join('?' for _ in ids)})",
        project,
        *ids,
    )
    if stored:
        return _replayed(conversation_id, batch, ids, metadata, [message_of(row) for row in stored])
    yield run(
        "INSERT INTO agent_conversations (project, id, metadata, created_at, updated_at,"
        " next_seq) VALUES (?, ?, '{}', ?, ?, 1) ON CONFLICT DO NOTHING",
        project,
        conversation_id,
        now,
        now,
    )
    counter = yield rows(
        "UPDATE agent_conversations SET next_seq = next_seq + ?, updated_at = ?"
        " WHERE project = ? AND id = ? RETURNING next_seq",
        len(batch),
        now,
        project,
        conversation_id,
    )
    first = int(counter[0][0]) - len(batch)
    appended = [
        Message(message_id, conversation_id, first + n, message.role, message.type,
                message.payload, meta, now, now)
        for n, (message_id, message, meta) in enumerate(zip(ids, batch, metadata, strict=True))
    ]  # fmt: skip
    for message in appended:
        yield run(
            f"INSERT INTO agent_messages (project, {MESSAGE_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            project,
            message.message_id,
            conversation_id,
            message.seq,
            message.role,
            message.type,
            json_text(message.payload),
            json_text(message.metadata),
            now,
            now,
        )
    return appended


def _replayed(
    conversation_id: str,
    batch: list[NewMessage],
    ids: list[str],
    metadata: list[dict[str, Any]],
    stored: list[Message],
) -> list[Message]:
    """A retried batch: every id stored with the same content, in this conversation."""
    by_id = {message.message_id: message for message in stored}
    if len(by_id) != len(ids):
        raise bad_request("A batch may not mix messages already stored with new ones.")
    for message_id, message, meta in zip(ids, batch, metadata, strict=True):
        found = by_id[message_id]
        same = (found.conversation_id, found.role, found.type, found.payload, found.metadata) == (
            conversation_id, message.role, message.type, message.payload, meta
        )  # fmt: skip
        if not same:
            raise conflict(f"Message '{message_id}' exists with other content or elsewhere.")
    return [by_id[message_id] for message_id in ids]


def get_message(project: str, message_id: str) -> Operation:
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = ? AND id = ?",
        project,
        message_id,
    )
    return message_of(found[0]) if found else None


def list_messages(
    project: str, conversation_id: str, order: str, limit: int, cursor: str | None
) -> Operation:
    if order not in ("asc", "desc") or not 1 <= limit <= 1000:
        raise bad_request("order is asc or desc, and limit from 1 to 1000.")
    if cursor is None:
        top = yield rows(
            "SELECT next_seq FROM agent_conversations WHERE project = ? AND id = ?",
            project,
            conversation_id,
        )
        if not top:
            return Page([], None)
        upper = int(top[0][0]) - 1  # appends after this read never enter the pages
        after = 0 if order == "asc" else upper + 1
    else:
        position = position_of(cursor)
        upper, after = int(position.get("u", 0)), int(position.get("a", 0))
    compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = ?"
        f" AND conversation_id = ? AND seq {compare} ? AND seq <= ?"
        f" ORDER BY seq {direction} LIMIT ?",
        project,
        conversation_id,
        after,
        upper,
        limit + 1,
    )
    items = [message_of(row) for row in found[:limit]]
    more = len(found) > limit
    return Page(items, cursor_of({"a": items[-1].seq, "u": upper}) if more else None)


_UPDATABLE = ("role", "type", "payload", "metadata")


def update_message(project: str, message_id: str, fields: dict[str, Any], now: float) -> Operation:
    given = {key: value for key, value in fields.items() if key in _UPDATABLE}
    if not given or len(given) != len(fields):
        raise bad_request(f"Give at least one of {', '.join(_UPDATABLE)} (and nothing else).")
    if "metadata" in given:
        given["metadata"] = check_metadata(given["metadata"])
    current = yield from get_message(project, message_id)
    if current is None:
        raise not_found(f"Message '{message_id}'")
    values = {key: json_text(value) if key in ("payload", "metadata") else value
              for key, value in given.items()}  # fmt: skip
    assignments = ", ".join(f"{key} = ?" for key in values)
    yield run(
        f"UPDATE agent_messages SET {assignments}, updated_at = ? WHERE project = ? AND id = ?",
        *values.values(),
        now,
        project,
        message_id,
    )
    return (yield from get_message(project, message_id))


def delete_message(project: str, message_id: str) -> Operation:
    yield run("DELETE FROM agent_messages WHERE project = ? AND id = ?", project, message_id)
    return None


def pop_message(project: str, conversation_id: str, now: float) -> Operation:
    """Remove and return the conversation's latest message (``None`` if it has none)."""
    # Touching the conversation first takes its row lock: concurrent pops take turns.
    touched = yield run(
        "UPDATE agent_conversations SET updated_at = ? WHERE project = ? AND id = ?",
        now,
        project,
        conversation_id,
    )
    if not touched:
        return None
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = ?"
        " AND conversation_id = ? ORDER BY seq DESC LIMIT 1",
        project,
        conversation_id,
    )
    if not found:
        return None
    message = message_of(found[0])
    yield from delete_message(project, message.message_id)
    return message


def clear_messages(project: str, conversation_id: str, now: float) -> Operation:
    deleted = yield run(
        "DELETE FROM agent_messages WHERE project = ? AND conversation_id = ?",
        project,
        conversation_id,
    )
    if deleted:
        yield run(
            "UPDATE agent_conversations SET updated_at = ? WHERE project = ? AND id = ?",
            now,
            project,
            conversation_id,
        )
    return None
