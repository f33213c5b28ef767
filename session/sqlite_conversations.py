"""Conversation statements for the SQLite backend; each runs inside the caller's transaction."""

from __future__ import annotations

import json
import sqlite3
import time

from .conversations import Conversation, conversation_from_row, fresh_items
from .errors import ConversationNotFound, InvalidCursor, ItemNotFound
from .models import Item, ItemPage, normalise_input
from .paging import Order


def insert(conn: sqlite3.Connection, conversation: Conversation) -> None:
    conn.execute(
        "INSERT INTO conversations (project, id, created_at, updated_at, metadata, next_seq)"
        " VALUES (?, ?, ?, ?, ?, 1)",
        (
            conversation.project,
            conversation.id,
            conversation.created_at,
            conversation.created_at,
            json.dumps(conversation.metadata),
        ),
    )


def load(conn: sqlite3.Connection, project: str, conversation_id: str) -> Conversation:
    row = conn.execute(
        "SELECT created_at, metadata FROM conversations WHERE project = ? AND id = ?",
        (project, conversation_id),
    ).fetchone()
    if row is None:
        raise ConversationNotFound(conversation_id)
    return conversation_from_row(project, conversation_id, row[0], row[1])


def update(
    conn: sqlite3.Connection, project: str, conversation_id: str, metadata: dict[str, str]
) -> Conversation:
    cursor = conn.execute(
        "UPDATE conversations SET metadata = ?, updated_at = ? WHERE project = ? AND id = ?",
        (json.dumps(metadata), time.time(), project, conversation_id),
    )
    if cursor.rowcount == 0:
        raise ConversationNotFound(conversation_id)
    return load(conn, project, conversation_id)


def delete(conn: sqlite3.Connection, project: str, conversation_id: str) -> None:
    cursor = conn.execute(
        "DELETE FROM conversations WHERE project = ? AND id = ?", (project, conversation_id)
    )
    if cursor.rowcount == 0:
        raise ConversationNotFound(conversation_id)


def append(
    conn: sqlite3.Connection, project: str, conversation_id: str, items: list[Item]
) -> list[Item]:
    """Append under the caller's write lock: sequence numbers come from the conversation row."""
    row = conn.execute(
        "SELECT next_seq FROM conversations WHERE project = ? AND id = ?",
        (project, conversation_id),
    ).fetchone()
    if row is None:
        raise ConversationNotFound(conversation_id)
    batch = normalise_input(items)
    ids = [item["id"] for item in batch]
    stored = conn.execute(
        "SELECT id, item FROM conversation_items WHERE project = ? AND conversation_id = ?"
        f" AND id IN ({', '.join('?' for _ in ids)})",
        (project, conversation_id, *ids),
    ).fetchall()
    fresh = fresh_items(batch, {item_id: json.loads(item) for item_id, item in stored})
    next_seq: int = row[0]
    conn.executemany(
        "INSERT INTO conversation_items (project, conversation_id, seq, id, item)"
        " VALUES (?, ?, ?, ?, ?)",
        [
            (project, conversation_id, next_seq + n, item["id"], json.dumps(item))
            for n, item in enumerate(fresh)
        ],
    )
    if fresh:
        conn.execute(
            "UPDATE conversations SET next_seq = ?, updated_at = ? WHERE project = ? AND id = ?",
            (next_seq + len(fresh), time.time(), project, conversation_id),
        )
    return batch


def page(
    conn: sqlite3.Connection,
    project: str,
    conversation_id: str,
    after: str | None,
    limit: int,
    order: Order,
) -> ItemPage:
    load(conn, project, conversation_id)
    where = "project = ? AND conversation_id = ?"
    params: list[object] = [project, conversation_id]
    if after is not None:
        cursor = conn.execute(
            f"SELECT seq FROM conversation_items WHERE {where} AND id = ?", (*params, after)
        ).fetchone()
        if cursor is None:
            raise InvalidCursor("after", after)
        where += " AND seq > ?" if order == "asc" else " AND seq < ?"
        params.append(cursor[0])
    rows = conn.execute(
        f"SELECT item FROM conversation_items WHERE {where}"
        f" ORDER BY seq {'ASC' if order == 'asc' else 'DESC'} LIMIT ?",
        (*params, limit + 1),
    ).fetchall()
    return ItemPage.of([json.loads(item) for (item,) in rows[:limit]], len(rows) > limit)


def all_items(conn: sqlite3.Connection, project: str, conversation_id: str) -> list[Item]:
    load(conn, project, conversation_id)
    rows = conn.execute(
        "SELECT item FROM conversation_items WHERE project = ? AND conversation_id = ?"
        " ORDER BY seq",
        (project, conversation_id),
    ).fetchall()
    return [json.loads(item) for (item,) in rows]


def get_item(conn: sqlite3.Connection, project: str, conversation_id: str, item_id: str) -> Item:
    load(conn, project, conversation_id)
    row = conn.execute(
        "SELECT item FROM conversation_items WHERE project = ? AND conversation_id = ? AND id = ?",
        (project, conversation_id, item_id),
    ).fetchone()
    if row is None:
        raise ItemNotFound(conversation_id, item_id)
    item: Item = json.loads(row[0])
    return item


def delete_item(conn: sqlite3.Connection, project: str, conversation_id: str, item_id: str) -> None:
    load(conn, project, conversation_id)
    cursor = conn.execute(
        "DELETE FROM conversation_items WHERE project = ? AND conversation_id = ? AND id = ?",
        (project, conversation_id, item_id),
    )
    if cursor.rowcount == 0:
        raise ItemNotFound(conversation_id, item_id)
