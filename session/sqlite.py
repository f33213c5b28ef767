"""The embedded default backend: one SQLite file, safe for several processes at once."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from . import sqlite_admin as admin
from . import sqlite_conversations as conversations
from .agent_store import AgentStore, CursorKey, SQLiteRunner
from .chain import DEFAULT_MAX_DEPTH, chain_turn
from .conversations import Conversation
from .errors import ResponseNotFound, SaveConflict
from .heartbeats import SQLITE as HEARTBEATS
from .keys import ApiKey
from .models import (
    ChainTurn,
    Item,
    ItemPage,
    RequestSnapshot,
    ResolvedChain,
    ResponseSnapshot,
    StoredResponse,
)
from .paging import Order, page_items
from .policy import ExistingTurn, check_save
from .sqlite_connections import SQLiteConnections
from .turn_cache import TurnCache, resolve_cached
from .usage import Pruned, UsageRecord, UsageRow

_COLUMN_NAMES = (
    "project",
    "id",
    "previous_response_id",
    "conversation_id",
    "created_at",
    "completed_at",
    "status",
    "request",
    "response",
    "metadata",
    "instance_id",
)
_COLUMNS = ", ".join(_COLUMN_NAMES)
_PLACEHOLDERS = ", ".join("?" for _ in _COLUMN_NAMES)
_INSERT = f"INSERT INTO responses ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"
# An overwrite writes what a turn became; its id, parent (the policy checks it),
# conversation and creation time stay, and so do the index entries on them.
_CHANGING = _COLUMN_NAMES[5:]
# The one overwrite the policy allows, made without reading the row first: of a turn
# stored unfinished under the same parent. Any other save reads the row and checks it.
_UPDATE_UNFINISHED = (
    "UPDATE responses SET "
    + ", ".join(f"{name} = ?" for name in _CHANGING)
    + " WHERE project = ? AND id = ? AND previous_response_id IS ?"
    " AND status IN ('in_progress', 'queued')"
)

# One statement: the recursive part walks parent links (UNION drops a row seen before,
# so a corrupted cycle ends), LIMIT stops one row past the depth limit, and the outer
# join fetches what each turn contributes.
_CHAIN_SQL = """
WITH RECURSIVE chain(id, parent) AS (
    SELECT id, previous_response_id FROM responses WHERE project = :project AND id = :id
    UNION
    SELECT r.id, r.previous_response_id
    FROM responses r JOIN chain ON r.id = chain.parent
    WHERE r.project = :project
    LIMIT :limit
)
SELECT r.id, r.previous_response_id, r.status,
       coalesce(json_extract(r.request, '$.input'), '[]'),
       coalesce(json_extract(r.response, '$.output'), '[]')
FROM chain JOIN responses r ON r.project = :project AND r.id = chain.id
"""


def _deletion_generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT generation FROM deletions").fetchone()[0])


def _existing_ids(conn: sqlite3.Connection, project: str, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), 500):  # within SQLite's limit of bound parameters
        chunk = ids[start : start + 500]
        rows = conn.execute(
            f"SELECT id FROM responses WHERE project = ? AND id IN ({', '.join('?' * len(chunk))})",
            (project, *chunk),
        )
        found.update(row[0] for row in rows)
    return found


def _to_row(record: StoredResponse) -> tuple[Any, ...]:
    return (
        record.project,
        record.id,
        record.previous_response_id,
        record.conversation_id,
        record.created_at,
        record.completed_at,
        record.status,
        # The snapshots hold plain JSON values only: orjson writes them in a fraction of
        # pydantic's time.
        orjson.dumps(record.request.__dict__).decode(),
        orjson.dumps(record.response.__dict__).decode(),
        orjson.dumps(record.metadata).decode(),
        record.instance_id,
    )


def _from_row(row: sqlite3.Row | tuple[Any, ...]) -> StoredResponse:
    return StoredResponse(
        project=row[0],
        id=row[1],
        previous_response_id=row[2],
        conversation_id=row[3],
        created_at=row[4],
        completed_at=row[5],
        status=row[6],
        request=RequestSnapshot.model_validate_json(row[7]),
        response=ResponseSnapshot.model_validate_json(row[8]),
        metadata=json.loads(row[9]),
        instance_id=row[10],
    )


class SQLiteStore:
    """A store in one SQLite file (WAL journal, busy timeout, versioned schema).

    Writes take the file's write lock first (``BEGIN IMMEDIATE``), so the save policy
    sees what other processes committed; see :mod:`session.sqlite_connections` for where
    statements run.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        busy_timeout_ms: int = 5000,
        cache_turns: int = 20_000,
    ) -> None:
        self._db = SQLiteConnections(path, busy_timeout_ms)
        self.schema_version = self._db.schema_version
        self._max_depth = max_depth
        self._cache = TurnCache(cache_turns)
        self._cursor_key = CursorKey(self.shared_secret)
        # Turns saved from now on cannot have been deleted at an earlier generation.
        self._cache.generation = _deletion_generation(self._db.writer)

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection that writes (tests play faults on it)."""
        return self._db.writer

    @property
    def read_connection(self) -> sqlite3.Connection:
        """The connection that reads (tests trace its statements)."""
        return self._db.reader

    @staticmethod
    def _select(conn: sqlite3.Connection, project: str, response_id: str) -> StoredResponse | None:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM responses WHERE project = ? AND id = ?",
            (project, response_id),
        ).fetchone()
        return None if row is None else _from_row(row)

    async def get(self, project: str, response_id: str) -> StoredResponse:
        record = await self._db.read(lambda conn: self._select(conn, project, response_id))
        if record is None:
            raise ResponseNotFound(response_id)
        return record

    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        conversation_items: list[Item] | None = None,
    ) -> None:
        row = _to_row(record)

        def write(conn: sqlite3.Connection) -> None:
            changing = row[-len(_CHANGING) :]
            key = (record.project, record.id)
            parent = record.previous_response_id
            if not (
                overwrite
                and conn.execute(_UPDATE_UNFINISHED, (*changing, *key, parent)).rowcount == 1
            ):
                # A new turn, or an overwrite the policy may refuse: the row decides.
                existing = None
                if overwrite:
                    found = conn.execute(
                        "SELECT previous_response_id, status FROM responses"
                        " WHERE project = ? AND id = ?",
                        key,
                    ).fetchone()
                    existing = None if found is None else ExistingTurn(*found)
                check_save(record, existing, overwrite=overwrite)
                conn.execute(_INSERT, row)
            if conversation_items is not None and record.conversation_id is not None:
                conversations.append(
                    conn, record.project, record.conversation_id, conversation_items
                )

        try:
            await self._db.write(write)
        except sqlite3.IntegrityError:
            raise SaveConflict(record.id, "a response with this id already exists.") from None
        self._cache.put(record.project, chain_turn(record))

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        return await resolve_cached(self._cache, self, project, response_id, self._max_depth)

    async def deletion_generation(self) -> int:
        return await self._db.read_now(_deletion_generation)

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        return await self._db.read_now(lambda conn: _existing_ids(conn, project, ids))

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        params = {"project": project, "id": head, "limit": limit}
        rows = await self._db.read(lambda conn: conn.execute(_CHAIN_SQL, params).fetchall())
        return [
            ChainTurn(row[0], row[1], row[2], orjson.loads(row[3]), orjson.loads(row[4]))
            for row in rows
        ]

    async def list_input_items(
        self,
        project: str,
        response_id: str,
        *,
        after: str | None = None,
        before: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        record = await self.get(project, response_id)
        return page_items(
            record.request.input, after=after, before=before, limit=limit, order=order
        )

    async def delete(self, project: str, response_id: str) -> None:
        def remove(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "DELETE FROM responses WHERE project = ? AND id = ?", (project, response_id)
            )
            return cursor.rowcount

        self._cache.discard(project, response_id)
        if await self._db.write(remove) == 0:
            raise ResponseNotFound(response_id)

    # -- conversations -----------------------------------------------------------------

    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        def create(conn: sqlite3.Connection) -> list[Item]:
            conversations.insert(conn, conversation)
            return conversations.append(conn, conversation.project, conversation.id, items)

        return await self._db.write(create)

    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        return await self._db.read(lambda c: conversations.load(c, project, conversation_id))

    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        return await self._db.write(
            lambda c: conversations.update(c, project, conversation_id, metadata)
        )

    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        await self._db.write(lambda c: conversations.delete(c, project, conversation_id))

    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        return await self._db.write(
            lambda c: conversations.append(c, project, conversation_id, items)
        )

    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        return await self._db.read(
            lambda c: conversations.page(c, project, conversation_id, after, limit, order)
        )

    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        return await self._db.read(lambda c: conversations.all_items(c, project, conversation_id))

    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        return await self._db.read(
            lambda c: conversations.get_item(c, project, conversation_id, item_id)
        )

    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        await self._db.write(
            lambda c: conversations.delete_item(c, project, conversation_id, item_id)
        )

    async def fail_stale(self, before: float, error: Item) -> int:
        def sweep(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "UPDATE responses SET status = 'failed', completed_at = ?,"
                " response = json_set(response, '$.error', json(?))"
                " WHERE status IN ('in_progress', 'queued') AND created_at < ?",
                (time.time(), json.dumps(error), before),
            )
            return cursor.rowcount

        return await self._db.write(sweep)

    async def beat(self, instance_id: str, at: float) -> None:
        await self._db.write(lambda conn: conn.execute(HEARTBEATS.beat, (instance_id, at)))

    async def fail_orphaned(self, alive_since: float, error: Item) -> int:
        def sweep(conn: sqlite3.Connection) -> int:
            marked = conn.execute(
                HEARTBEATS.fail_orphaned, (time.time(), json.dumps(error), alive_since)
            ).rowcount
            conn.execute(HEARTBEATS.forget, (alive_since,))
            return marked

        return await self._db.write(sweep)

    async def prune(self, before: float, limit: int) -> Pruned:
        return await self._db.write(lambda conn: admin.prune(conn, before, limit))

    async def usage(self, project: str | None, since: float) -> list[UsageRow]:
        return await self._db.read(lambda conn: admin.usage(conn, project, since))

    async def record_usage(self, record: UsageRecord) -> None:
        await self._db.write(lambda conn: admin.record_usage(conn, record))

    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        await self._db.write(lambda c: admin.append_events(c, project, response_id, events))

    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        return await self._db.read_now(
            lambda c: admin.events_after(c, project, response_id, after, limit)
        )

    async def prune_events(self, before: float) -> int:
        return await self._db.write(lambda conn: admin.prune_events(conn, before))

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store of ``project``, in this file."""
        return AgentStore(SQLiteRunner(self._db), project, cursor_key=self._cursor_key)

    async def shared_secret(self, name: str, candidate: str) -> str:
        return await self._db.write(lambda conn: admin.shared_secret(conn, name, candidate))

    async def create_key(self, key: ApiKey) -> None:
        await self._db.write(lambda conn: admin.insert_key(conn, key))

    async def find_key(self, secret_hash: str) -> ApiKey | None:
        return await self._db.read(lambda conn: admin.find_key(conn, secret_hash))

    async def list_keys(self, project: str | None = None) -> list[ApiKey]:
        return await self._db.read(lambda conn: admin.list_keys(conn, project))

    async def revoke_key(self, key_id: str) -> ApiKey:
        return await self._db.write(lambda conn: admin.revoke_key(conn, key_id, time.time()))

    async def ping(self) -> None:
        await self._db.read(lambda conn: conn.execute("SELECT 1").fetchone())
        await self._db.check_writes()

    async def close(self) -> None:
        await self._db.close()
