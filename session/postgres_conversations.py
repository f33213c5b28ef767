"""Conversation statements for the PostgreSQL backend; each runs in the caller's transaction."""

from __future__ import annotations

import time
from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from .conversations import Conversation, conversation_from_row, fresh_items
from .errors import ConversationNotFound, InvalidCursor, ItemNotFound
from .models import Item, ItemPage, normalise_input
from .paging import Order

Connection = AsyncConnection[tuple[Any, ...]]
_KEY = "project = %s AND conversation_id = %s"


async def insert(conn: Connection, conversation: Conversation) -> None:
    await conn.execute(
        "INSERT INTO conversations (project, id, created_at, updated_at, metadata)"
        " VALUES (%s, %s, %s, %s, %s)",
        (
            conversation.project,
            conversation.id,
            conversation.created_at,
            conversation.created_at,
            Jsonb(conversation.metadata),
        ),
    )


async def load(conn: Connection, project: str, conversation_id: str) -> Conversation:
    cursor = await conn.execute(
        "SELECT created_at, metadata FROM conversations WHERE project = %s AND id = %s",
        (project, conversation_id),
    )
    row = await cursor.fetchone()
    if row is None:
        raise ConversationNotFound(conversation_id)
    return conversation_from_row(project, conversation_id, row[0], row[1])


async def _lock_next_seq(conn: Connection, project: str, conversation_id: str) -> int:
    """The next sequence number, with the conversation's row held to the transaction's end."""
    cursor = await conn.execute(
        "SELECT next_seq FROM conversations WHERE project = %s AND id = %s FOR UPDATE",
        (project, conversation_id),
    )
    row = await cursor.fetchone()
    if row is None:
        raise ConversationNotFound(conversation_id)
    return int(row[0])


async def update(
    conn: Connection, project: str, conversation_id: str, metadata: dict[str, str]
) -> Conversation:
    cursor = await conn.execute(
        "UPDATE conversations SET metadata = %s, updated_at = %s WHERE project = %s AND id = %s",
        (Jsonb(metadata), time.time(), project, conversation_id),
    )
    if cursor.rowcount == 0:
        raise ConversationNotFound(conversation_id)
    return await load(conn, project, conversation_id)


async def delete(conn: Connection, project: str, conversation_id: str) -> None:
    cursor = await conn.execute(
        "DELETE FROM conversations WHERE project = %s AND id = %s", (project, conversation_id)
    )
    if cursor.rowcount == 0:
        raise ConversationNotFound(conversation_id)


async def append(
    conn: Connection, project: str, conversation_id: str, items: list[Item]
) -> list[Item]:
    """Append with the conversation row locked, so concurrent appends queue behind it."""
    next_seq = await _lock_next_seq(conn, project, conversation_id)
    batch = normalise_input(items)
    cursor = await conn.execute(
        f"SELECT id, item FROM conversation_items WHERE {_KEY} AND id = ANY(%s)",
        (project, conversation_id, [item["id"] for item in batch]),
    )
    fresh = fresh_items(batch, {item_id: item for item_id, item in await cursor.fetchall()})
    if fresh:
        async with conn.cursor() as insert_cursor:
            await insert_cursor.executemany(
                "INSERT INTO conversation_items (project, conversation_id, seq, id, item)"
                " VALUES (%s, %s, %s, %s, %s)",
                [
                    (project, conversation_id, next_seq + n, item["id"], Jsonb(item))
                    for n, item in enumerate(fresh)
                ],
            )
        await conn.execute(
            "UPDATE conversations SET next_seq = %s, updated_at = %s"
            " WHERE project = %s AND id = %s",
            (next_seq + len(fresh), time.time(), project, conversation_id),
        )
    return batch


async def page(
    conn: Connection,
    project: str,
    conversation_id: str,
    after: str | None,
    limit: int,
    order: Order,
) -> ItemPage:
    await load(conn, project, conversation_id)
    where, params = _KEY, [project, conversation_id]
    if after is not None:
        cursor = await conn.execute(
            f"SELECT seq FROM conversation_items WHERE {_KEY} AND id = %s", (*params, after)
        )
        found = await cursor.fetchone()
        if found is None:
            raise InvalidCursor("after", after)
        where += " AND seq > %s" if order == "asc" else " AND seq < %s"
        params.append(found[0])
    direction = "ASC" if order == "asc" else "DESC"
    cursor = await conn.execute(
        f"SELECT item FROM conversation_items WHERE {where} ORDER BY seq {direction} LIMIT %s",
        (*params, limit + 1),
    )
    rows = await cursor.fetchall()
    return ItemPage.of([item for (item,) in rows[:limit]], len(rows) > limit)


async def all_items(conn: Connection, project: str, conversation_id: str) -> list[Item]:
    await load(conn, project, conversation_id)
    cursor = await conn.execute(
        f"SELECT item FROM conversation_items WHERE {_KEY} ORDER BY seq",
        (project, conversation_id),
    )
    return [item for (item,) in await cursor.fetchall()]


async def get_item(conn: Connection, project: str, conversation_id: str, item_id: str) -> Item:
    await load(conn, project, conversation_id)
    cursor = await conn.execute(
        f"SELECT item FROM conversation_items WHERE {_KEY} AND id = %s",
        (project, conversation_id, item_id),
    )
    row = await cursor.fetchone()
    if row is None:
        raise ItemNotFound(conversation_id, item_id)
    item: Item = row[0]
    return item


async def delete_item(conn: Connection, project: str, conversation_id: str, item_id: str) -> None:
    await load(conn, project, conversation_id)
    cursor = await conn.execute(
        f"DELETE FROM conversation_items WHERE {_KEY} AND id = %s",
        (project, conversation_id, item_id),
    )
    if cursor.rowcount == 0:
        raise ItemNotFound(conversation_id, item_id)
