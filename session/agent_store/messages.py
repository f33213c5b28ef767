"""The agent Store's messages, as operations (see :mod:`.sql`): appended in order under
per-conversation sequence numbers, listed by cursor, updated whole, popped, cleared."""

from __future__ import annotations

from typing import Any

from ..ids import new_id
from ..sql import Operation, in_list, rows, run
from .cursors import Cursors, MessagePosition
from .errors import bad_request, conflict, not_found
from .models import Message, NewMessage, Page
from .operations import later, touch
from .values import (
    MAX_BATCH,
    MESSAGE_COLUMNS,
    check_id,
    check_label,
    check_metadata,
    json_text,
    message_of,
)


def append_messages(
    project: str, conversation_id: str, batch: list[NewMessage], now: float
) -> Operation:
    """Append all or nothing; a batch already stored (same content) is returned as stored."""
    check_id(conversation_id, "conversationId")
    if not 1 <= len(batch) <= MAX_BATCH:
        raise bad_request(f"A batch holds 1 to {MAX_BATCH} messages.", "messages")
    ids = [message.message_id or new_id("msg") for message in batch]
    for n, (message_id, new) in enumerate(zip(ids, batch, strict=True)):
        check_id(message_id, f"messages[{n}].messageId")
        check_label(new.role, f"messages[{n}].role")
        check_label(new.type, f"messages[{n}].type")
    if len(set(ids)) != len(ids):
        raise bad_request("The messages of a batch need distinct ids.", "messages")
    metadata = [
        check_metadata(message.metadata, f"messages[{n}].metadata")
        for n, message in enumerate(batch)
    ]
    marks, id_params = in_list("id", ids)
    stored = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = :project"
        f" AND id IN ({marks})",
        project=project,
        **id_params,
    )
    if stored:
        return _replayed(conversation_id, batch, ids, metadata, [message_of(row) for row in stored])
    created = yield run(
        "INSERT INTO agent_conversations (project, id, metadata, created_at, updated_at,"
        " next_seq) VALUES (:project, :id, '{}', :now, :now, 1) ON CONFLICT DO NOTHING",
        project=project,
        id=conversation_id,
        now=now,
    )
    # The counter's update takes the row lock; what it returns of updated_at is as it was.
    counter = yield rows(
        "UPDATE agent_conversations SET next_seq = next_seq + :count"
        " WHERE project = :project AND id = :id RETURNING next_seq, updated_at",
        count=len(batch),
        project=project,
        id=conversation_id,
    )
    if not created:
        yield run(
            "UPDATE agent_conversations SET updated_at = :updated_at"
            " WHERE project = :project AND id = :id",
            updated_at=later(now, float(counter[0][1])),
            project=project,
            id=conversation_id,
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
            " VALUES (:project, :id, :conversation_id, :seq, :role, :type, :payload, :metadata,"
            " :now, :now)",
            project=project,
            id=message.message_id,
            conversation_id=conversation_id,
            seq=message.seq,
            role=message.role,
            type=message.type,
            payload=json_text(message.payload),
            metadata=json_text(message.metadata),
            now=now,
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
    check_id(message_id, "messageId")
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = :project AND id = :id",
        project=project,
        id=message_id,
    )
    return message_of(found[0]) if found else None


def list_messages(
    project: str,
    conversation_id: str,
    order: str,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
) -> Operation:
    check_id(conversation_id, "conversationId")
    if order not in ("asc", "desc"):
        raise bad_request("Invalid 'order': asc or desc.", "order")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise bad_request("Invalid 'limit': an integer from 1 to 1000.", "limit")
    scope = ["messages", project, conversation_id, order]
    if cursor is None:
        top = yield rows(
            "SELECT next_seq FROM agent_conversations WHERE project = :project AND id = :id",
            project=project,
            id=conversation_id,
        )
        if not top:
            return Page([], None)
        upper = int(top[0][0]) - 1  # appends after this read never enter the pages
        after = 0 if order == "asc" else upper + 1
    else:
        position = cursors.open(scope, cursor, MessagePosition)
        upper, after = position.u, position.a
    compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = :project"
        f" AND conversation_id = :conversation_id AND seq {compare} :after AND seq <= :upper"
        f" ORDER BY seq {direction} LIMIT :limit",
        project=project,
        conversation_id=conversation_id,
        after=after,
        upper=upper,
        limit=limit + 1,
    )
    items = [message_of(row) for row in found[:limit]]
    more = len(found) > limit
    if not more:
        return Page(items, None)
    return Page(items, cursors.seal(scope, MessagePosition(a=items[-1].seq, u=upper)))


_UPDATABLE = ("role", "type", "payload", "metadata")


def update_message(project: str, message_id: str, fields: dict[str, Any], now: float) -> Operation:
    check_id(message_id, "messageId")
    for key in fields:
        if key not in _UPDATABLE:
            raise bad_request(
                f"Unknown field '{key}': a message updates {', '.join(_UPDATABLE)}.", key
            )
    if not fields:
        raise bad_request(f"Give at least one of {', '.join(_UPDATABLE)}.")
    given = dict(fields)
    for key in ("role", "type"):
        if key in given:
            check_label(given[key], key)
    if "metadata" in given:
        given["metadata"] = check_metadata(given["metadata"])
    current = yield from get_message(project, message_id)
    if current is None:
        raise not_found(f"Message '{message_id}'")
    values = {key: json_text(value) if key in ("payload", "metadata") else value
              for key, value in given.items()}  # fmt: skip
    assignments = ", ".join(f"{key} = :{key}" for key in values)
    yield run(
        f"UPDATE agent_messages SET {assignments}, updated_at = :now"
        " WHERE project = :project AND id = :id",
        **values,
        now=now,
        project=project,
        id=message_id,
    )
    return (yield from get_message(project, message_id))


def delete_message(project: str, message_id: str) -> Operation:
    check_id(message_id, "messageId")
    yield run(
        "DELETE FROM agent_messages WHERE project = :project AND id = :id",
        project=project,
        id=message_id,
    )
    return None


def pop_message(project: str, conversation_id: str, now: float) -> Operation:
    """Remove and return the conversation's latest message (``None`` if it has none)."""
    check_id(conversation_id, "conversationId")
    # Touching the conversation first takes its row lock: concurrent pops take turns.
    touched = yield from touch(project, conversation_id, now)
    if touched is None:
        return None
    found = yield rows(
        f"SELECT {MESSAGE_COLUMNS} FROM agent_messages WHERE project = :project"
        " AND conversation_id = :conversation_id ORDER BY seq DESC LIMIT 1",
        project=project,
        conversation_id=conversation_id,
    )
    if not found:
        return None
    message = message_of(found[0])
    yield from delete_message(project, message.message_id)
    return message


def clear_messages(project: str, conversation_id: str, now: float) -> Operation:
    check_id(conversation_id, "conversationId")
    deleted = yield run(
        "DELETE FROM agent_messages"
        " WHERE project = :project AND conversation_id = :conversation_id",
        project=project,
        conversation_id=conversation_id,
    )
    if deleted:
        yield from touch(project, conversation_id, now)
    return None
