"""Conversations and their items, as operations run in the caller's transaction."""

from __future__ import annotations

import time

from ..conversations import (
    Conversation,
    StoredConversation,
    conversation_from_row,
    fresh_items,
)
from ..errors import ConversationNotFound, InvalidCursor, ItemNotFound
from ..models import Item, ItemPage, normalise_input
from ..paging import Order
from .dialect import Dialect
from .responses import PAGE_AFTER, PAGE_ORDER
from .statement import Returning, in_list, rows, run, run_many

_CONVERSATION = "project = :project AND id = :conversation_id"
_ITEMS = "project = :project AND conversation_id = :conversation_id"


def insert(dialect: Dialect, conversation: Conversation) -> Returning[None]:
    yield run(
        "INSERT INTO conversations (project, id, created_at, updated_at, metadata, next_seq)"
        " VALUES (:project, :id, :created_at, :created_at, :metadata, 1)",
        project=conversation.project,
        id=conversation.id,
        created_at=conversation.created_at,
        metadata=dialect.json(conversation.metadata),
    )


def load(dialect: Dialect, project: str, conversation_id: str) -> Returning[Conversation]:
    found = yield rows(
        f"SELECT created_at, metadata FROM conversations WHERE {_CONVERSATION}",
        project=project,
        conversation_id=conversation_id,
    )
    if not found:
        raise ConversationNotFound(conversation_id)
    return conversation_from_row(project, conversation_id, found[0][0], found[0][1])


def update(
    dialect: Dialect, project: str, conversation_id: str, metadata: dict[str, str]
) -> Returning[Conversation]:
    changed = yield run(
        f"UPDATE conversations SET metadata = :metadata, updated_at = :now WHERE {_CONVERSATION}",
        metadata=dialect.json(metadata),
        now=time.time(),
        project=project,
        conversation_id=conversation_id,
    )
    if changed == 0:
        raise ConversationNotFound(conversation_id)
    return (yield from load(dialect, project, conversation_id))


def delete(dialect: Dialect, project: str, conversation_id: str) -> Returning[None]:
    deleted = yield run(
        f"DELETE FROM conversations WHERE {_CONVERSATION}",
        project=project,
        conversation_id=conversation_id,
    )
    if deleted == 0:
        raise ConversationNotFound(conversation_id)


def append(
    dialect: Dialect, project: str, conversation_id: str, items: list[Item]
) -> Returning[list[Item]]:
    """Append with the conversation's row held (SQLite's writer holds the file), so that
    concurrent appends queue behind it; sequence numbers come from that row."""
    key = {"project": project, "conversation_id": conversation_id}
    top = yield rows(
        f"SELECT next_seq FROM conversations WHERE {_CONVERSATION}{dialect.for_update}", **key
    )
    if not top:
        raise ConversationNotFound(conversation_id)
    next_seq = int(top[0][0])
    batch = normalise_input(items)
    stored = []
    if batch:
        marks, ids = in_list("id", [item["id"] for item in batch])
        stored = yield rows(
            f"SELECT id, item FROM conversation_items WHERE {_ITEMS} AND id IN ({marks})",
            **key,
            **ids,
        )
    fresh = fresh_items(batch, {item_id: dialect.loads(item) for item_id, item in stored})
    if fresh:
        yield run_many(
            "INSERT INTO conversation_items (project, conversation_id, seq, id, item)"
            " VALUES (:project, :conversation_id, :seq, :id, :item)",
            [
                {**key, "seq": next_seq + n, "id": item["id"], "item": dialect.json(item)}
                for n, item in enumerate(fresh)
            ],
        )
        yield run(
            "UPDATE conversations SET next_seq = :next_seq, updated_at = :now"
            f" WHERE {_CONVERSATION}",
            next_seq=next_seq + len(fresh),
            now=time.time(),
            **key,
        )
    return batch


def page(
    dialect: Dialect,
    project: str,
    conversation_id: str,
    after: str | None,
    limit: int,
    order: Order,
) -> Returning[ItemPage]:
    yield from load(dialect, project, conversation_id)
    key = {"project": project, "conversation_id": conversation_id}
    where = _ITEMS
    if after is not None:
        found = yield rows(
            f"SELECT seq FROM conversation_items WHERE {_ITEMS} AND id = :after", **key, after=after
        )
        if not found:
            raise InvalidCursor("after", after)
        where += " AND seq > :seq" if order == "asc" else " AND seq < :seq"
        key["seq"] = found[0][0]
    direction = "ASC" if order == "asc" else "DESC"
    found = yield rows(
        f"SELECT item FROM conversation_items WHERE {where} ORDER BY seq {direction} LIMIT :limit",
        **key,
        limit=limit + 1,
    )
    return ItemPage.of([dialect.loads(item) for (item,) in found[:limit]], len(found) > limit)


def all_items(dialect: Dialect, project: str, conversation_id: str) -> Returning[list[Item]]:
    yield from load(dialect, project, conversation_id)
    found = yield rows(
        f"SELECT item FROM conversation_items WHERE {_ITEMS} ORDER BY seq",
        project=project,
        conversation_id=conversation_id,
    )
    return [dialect.loads(item) for (item,) in found]


def get_item(dialect: Dialect, project: str, conversation_id: str, item_id: str) -> Returning[Item]:
    yield from load(dialect, project, conversation_id)
    found = yield rows(
        f"SELECT item FROM conversation_items WHERE {_ITEMS} AND id = :id",
        project=project,
        conversation_id=conversation_id,
        id=item_id,
    )
    if not found:
        raise ItemNotFound(conversation_id, item_id)
    item: Item = dialect.loads(found[0][0])
    return item


def delete_item(
    dialect: Dialect, project: str, conversation_id: str, item_id: str
) -> Returning[None]:
    yield from load(dialect, project, conversation_id)
    deleted = yield run(
        f"DELETE FROM conversation_items WHERE {_ITEMS} AND id = :id",
        project=project,
        conversation_id=conversation_id,
        id=item_id,
    )
    if deleted == 0:
        raise ItemNotFound(conversation_id, item_id)


def page_stored(
    dialect: Dialect, project: str, after: tuple[float, str] | None, limit: int
) -> Returning[list[StoredConversation]]:
    """Up to ``limit`` conversations of ``project`` after the position ``after``."""
    where = "" if after is None else PAGE_AFTER
    position = {} if after is None else {"created_at": after[0], "id": after[1]}
    found = yield rows(
        "SELECT id, created_at, metadata, updated_at FROM conversations"
        f" WHERE project = :project{where}{PAGE_ORDER}",
        project=project,
        limit=limit,
        **position,
    )
    return [
        StoredConversation(
            conversation_from_row(project, conversation_id, created_at, metadata),
            created_at if updated_at is None else updated_at,
        )
        for conversation_id, created_at, metadata, updated_at in found
    ]


_BATCH = 500  # items appended per statement: within SQLite's limit of bound parameters


def restore(dialect: Dialect, stored: StoredConversation, items: list[Item]) -> Returning[bool]:
    """Insert a conversation with its items unless its id is taken, then set the time its
    items last changed to the one it was kept with."""
    conversation = stored.conversation
    inserted = yield run(
        "INSERT INTO conversations (project, id, created_at, updated_at, metadata, next_seq)"
        " VALUES (:project, :id, :created_at, :updated_at, :metadata, 1)"
        " ON CONFLICT (project, id) DO NOTHING",
        project=conversation.project,
        id=conversation.id,
        created_at=conversation.created_at,
        updated_at=stored.updated_at,
        metadata=dialect.json(conversation.metadata),
    )
    if inserted == 0:
        return False
    for start in range(0, len(items), _BATCH):
        batch = items[start : start + _BATCH]
        yield from append(dialect, conversation.project, conversation.id, batch)
    yield run(
        f"UPDATE conversations SET updated_at = :updated_at WHERE {_CONVERSATION}",
        updated_at=stored.updated_at,
        project=conversation.project,
        conversation_id=conversation.id,
    )
    return True
