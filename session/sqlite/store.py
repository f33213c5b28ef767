"""A store in one SQLite file: the hot paths tuned for sqlite3, the rest shared."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, TypeVar

import orjson

from ..agent_store import AgentStore, CursorKey, SQLiteRunner
from ..chain import DEFAULT_MAX_DEPTH, chain_turn
from ..errors import ResponseNotFound, SaveConflict
from ..models import (
    ChainTurn,
    Item,
    ItemPage,
    RequestSnapshot,
    ResolvedChain,
    ResponseSnapshot,
    StoredResponse,
)
from ..paging import Order, page_items
from ..policy import ExistingTurn, check_save
from ..sql import SQLITE, drive, responses
from ..sql.conversations import append
from ..sql.store import Make, SQLStore
from ..turn_cache import TurnCache, resolve_cached
from .connections import SQLiteConnections, Synchronous
from .syncers import SyncHooks

T = TypeVar("T")
_PARENT_AND_STATUS = responses.parent_and_status(SQLITE)


def _to_row(record: StoredResponse) -> dict[str, Any]:
    return {
        "project": record.project,
        "id": record.id,
        "previous_response_id": record.previous_response_id,
        "conversation_id": record.conversation_id,
        "created_at": record.created_at,
        "completed_at": record.completed_at,
        "status": record.status,
        # The snapshots hold plain JSON values only: orjson writes them in a fraction of
        # pydantic's time.
        "request": orjson.dumps(record.request.__dict__).decode(),
        "response": orjson.dumps(record.response.__dict__).decode(),
        "metadata": orjson.dumps(record.metadata).decode(),
        "instance_id": record.instance_id,
        "timeline": None if record.timeline is None else orjson.dumps(record.timeline).decode(),
    }


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
        timeline=None if row[11] is None else json.loads(row[11]),
    )


class SQLiteStore(SQLStore):
    """A store in one SQLite file (WAL journal, busy timeout, versioned schema).

    Writes take the file's write lock first (``BEGIN IMMEDIATE``), so the save policy
    sees what other processes committed; see :mod:`session.sqlite.connections` for where
    statements run.
    """

    dialect = SQLITE

    def __init__(
        self,
        path: str | Path,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        busy_timeout_ms: int = 5000,
        cache_turns: int = 20_000,
        synchronous: Synchronous = "full",
        sync_hooks: SyncHooks | None = None,
    ) -> None:
        """``synchronous`` and ``sync_hooks``: see :mod:`session.sqlite.durability`."""
        self._db = SQLiteConnections(
            path, busy_timeout_ms, synchronous=synchronous, sync_hooks=sync_hooks
        )
        self.schema_version = self._db.schema_version
        self._max_depth = max_depth
        self._cache = TurnCache(cache_turns)
        self._cursor_key = CursorKey(self.shared_secret)
        # Turns saved from now on cannot have been deleted at an earlier generation.
        generation = self._db.writer.execute(responses.DELETION_GENERATION).fetchone()[0]
        self._cache.generation = int(generation)

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection that writes (tests play faults on it)."""
        return self._db.writer

    @property
    def sync_process(self) -> int | None:
        """The pid of the process that syncs the WAL (``None``: ``normal``, or a thread
        syncs it)."""
        return None if self._db.wal_sync is None else self._db.wal_sync.process

    @property
    def read_connection(self) -> sqlite3.Connection:
        """The connection that reads (tests trace its statements)."""
        return self._db.reader

    async def _read(self, make: Make[T]) -> T:
        return await self._db.read(lambda conn: drive(conn, make()))

    async def _read_now(self, make: Make[T]) -> T:
        return await self._db.read_now(lambda conn: drive(conn, make()))

    async def _write(self, make: Make[T], *, durable: bool = True) -> T:
        return await self._db.write(lambda conn: drive(conn, make()), durable=durable)

    @staticmethod
    def _select(conn: sqlite3.Connection, project: str, response_id: str) -> StoredResponse | None:
        row = conn.execute(responses.SELECT, {"project": project, "id": response_id}).fetchone()
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
            if not (overwrite and conn.execute(responses.UPDATE_UNFINISHED, row).rowcount == 1):
                # A new turn, or an overwrite the policy may refuse: the row decides.
                existing = None
                if overwrite:
                    found = conn.execute(_PARENT_AND_STATUS, row).fetchone()
                    existing = None if found is None else ExistingTurn(*found)
                check_save(record, existing, overwrite=overwrite)
                conn.execute(responses.INSERT, row)
            if conversation_items is not None and record.conversation_id is not None:
                drive(
                    conn,
                    append(SQLITE, record.project, record.conversation_id, conversation_items),
                )

        try:
            # A turn still in progress needs no sync of its own: it is acknowledged only
            # when it ends, and the sync of that save covers this one.
            await self._db.write(write, durable=record.status != "in_progress")
        except sqlite3.IntegrityError:
            raise SaveConflict(record.id, "a response with this id already exists.") from None
        self._cache.put(record.project, chain_turn(record))

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        return await resolve_cached(self._cache, self, project, response_id, self._max_depth)

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        params = {"project": project, "id": head, "limit": limit}
        found = await self._db.read(
            lambda conn: conn.execute(responses.CHAIN_SQLITE, params).fetchall()
        )
        return [
            ChainTurn(
                row[0],
                row[1],
                row[2],
                orjson.loads(row[3]),
                orjson.loads(row[4]),
                orjson.loads(row[5]) if row[5] is not None else None,
            )
            for row in found
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

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store of ``project``, in this file."""
        return AgentStore(SQLiteRunner(self._db), project, cursor_key=self._cursor_key)

    async def ping(self) -> None:
        await self._db.read(lambda conn: conn.execute("SELECT 1").fetchone())
        await self._db.check_writes()

    async def close(self) -> None:
        await self._db.close()
