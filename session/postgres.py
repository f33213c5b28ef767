"""The shared backend: PostgreSQL through psycopg 3 and a connection pool.

Several gateway instances may use one database: every save runs its policy checks and
its write in one transaction, and the chain is read with one recursive query. A database
that is down makes calls raise :class:`StoreUnavailable`; the pool reconnects by itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from . import postgres_admin as admin
from . import postgres_chain as chains
from . import postgres_conversations as conversations
from .agent_store import AgentStore, CursorKey, drive_async
from .agent_store.store import OperationFactory
from .chain import DEFAULT_MAX_DEPTH, chain_turn
from .conversations import Conversation
from .errors import InvalidData, ResponseNotFound, SaveConflict, StoreUnavailable
from .heartbeats import POSTGRES as HEARTBEATS
from .keys import ApiKey
from .models import ChainTurn, Item, ItemPage, ResolvedChain, StoredResponse
from .paging import Order, page_items
from .policy import ExistingTurn, check_save
from .postgres_agent import PostgresRunner
from .postgres_deadline import bounded
from .postgres_schema import migrate
from .turn_cache import TurnCache, resolve_cached
from .usage import Pruned, UsageRecord, UsageRow

_NAMES = (
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
_COLUMNS = ", ".join(_NAMES)
_VALUES = ", ".join("%s" for _ in _NAMES)
_INSERT = f"INSERT INTO responses ({_COLUMNS}) VALUES ({_VALUES}) ON CONFLICT (project, id) "
_UPSERT = _INSERT + "DO UPDATE SET " + ", ".join(f"{n} = EXCLUDED.{n}" for n in _NAMES[2:])
_INSERT += "DO NOTHING"


def _row(record: StoredResponse) -> tuple[Any, ...]:
    data = record.model_dump(mode="json")
    return (
        record.project,
        record.id,
        record.previous_response_id,
        record.conversation_id,
        record.created_at,
        record.completed_at,
        record.status,
        Jsonb(data["request"]),
        Jsonb(data["response"]),
        Jsonb(data["metadata"]),
        record.instance_id,
    )


def _record(row: tuple[Any, ...]) -> StoredResponse:
    return StoredResponse.model_validate(dict(zip(_NAMES, row, strict=True)))


class PostgresStore:
    """A store in one PostgreSQL database, shared by any number of gateway instances."""

    def __init__(
        self,
        dsn: str,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        pool_min: int = 1,
        pool_max: int = 10,
        connect_timeout: float = 5.0,
        statement_timeout: float = 10.0,
        cache_turns: int = 20_000,
    ) -> None:
        self._max_depth = max_depth
        self._cache = TurnCache(cache_turns)
        self._cursor_key = CursorKey(self.shared_secret)
        # A stalled network carries not even the server-side timeout's error: each call
        # gives up a little later on its own (see ``bounded``).
        self.deadline = connect_timeout + statement_timeout + 1.0
        timeout_ms = int(statement_timeout * 1000)

        async def configure(conn: AsyncConnection[tuple[Any, ...]]) -> None:
            await conn.execute(f"SET statement_timeout = {timeout_ms}")
            await conn.commit()

        self._pool: AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]] = AsyncConnectionPool(
            dsn,
            min_size=pool_min,
            max_size=pool_max,
            open=False,
            timeout=connect_timeout,
            check=AsyncConnectionPool.check_connection,
            configure=configure,
            kwargs={"connect_timeout": max(1, int(connect_timeout))},
        )
        self._ready = False
        self._opening = asyncio.Lock()
        self.schema_version = 0

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[tuple[Any, ...]]]:
        """A pooled connection inside a transaction; database outages become 503s."""
        try:
            if not self._ready:
                await self._open()
            async with self._pool.connection() as conn, conn.transaction():
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as error:
            raise StoreUnavailable(
                f"The session database is unavailable ({type(error).__name__})."
            ) from None
        except psycopg.DataError as error:
            raise InvalidData(f"The session database refused a value ({error.sqlstate}).") from None

    async def _open(self) -> None:
        async with self._opening:
            if self._ready:
                return
            await self._pool.open(wait=False)
            async with self._pool.connection() as conn:
                self.schema_version = await migrate(conn)
                # Turns saved from now on cannot have been deleted at an earlier generation.
                self._cache.generation = await chains.deletion_generation(conn)
            self._ready = True

    @bounded
    async def get(self, project: str, response_id: str) -> StoredResponse:
        async with self._connection() as conn:
            cursor = await conn.execute(
                f"SELECT {_COLUMNS} FROM responses WHERE project = %s AND id = %s",
                (project, response_id),
            )
            row = await cursor.fetchone()
        if row is None:
            raise ResponseNotFound(response_id)
        return _record(row)

    @bounded
    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        conversation_items: list[Item] | None = None,
    ) -> None:
        row = _row(record)
        try:
            async with self._connection() as conn:
                existing = None
                if overwrite:  # a first save needs no read: ON CONFLICT reports a taken id
                    cursor = await conn.execute(
                        "SELECT previous_response_id, status FROM responses"
                        " WHERE project = %s AND id = %s FOR UPDATE",
                        (record.project, record.id),
                    )
                    found = await cursor.fetchone()
                    existing = None if found is None else ExistingTurn(found[0], found[1])
                check_save(record, existing, overwrite=overwrite)
                if conversation_items is not None and record.conversation_id is not None:
                    await conversations.append(
                        conn, record.project, record.conversation_id, conversation_items
                    )
                cursor = await conn.execute(_INSERT if existing is None else _UPSERT, row)
                if cursor.rowcount == 0:  # the id is taken (perhaps by another instance)
                    raise SaveConflict(record.id, "a response with this id already exists.")
        except psycopg.IntegrityError as error:
            raise SaveConflict(record.id, f"the database refused it ({error.sqlstate}).") from None
        self._cache.put(record.project, chain_turn(record))

    @bounded
    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        return await resolve_cached(self._cache, self, project, response_id, self._max_depth)

    async def deletion_generation(self) -> int:
        async with self._connection() as conn:
            return await chains.deletion_generation(conn)

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        async with self._connection() as conn:
            return await chains.existing_ids(conn, project, ids)

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        async with self._connection() as conn:
            return await chains.chain_turns(conn, project, head, limit)

    @bounded
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
        async with self._connection() as conn:
            cursor = await conn.execute(
                "SELECT request -> 'input' FROM responses WHERE project = %s AND id = %s",
                (project, response_id),
            )
            row = await cursor.fetchone()
        if row is None:
            raise ResponseNotFound(response_id)
        return page_items(row[0], after=after, before=before, limit=limit, order=order)

    @bounded
    async def delete(self, project: str, response_id: str) -> None:
        self._cache.discard(project, response_id)
        async with self._connection() as conn:
            cursor = await conn.execute(
                "DELETE FROM responses WHERE project = %s AND id = %s", (project, response_id)
            )
        if cursor.rowcount == 0:
            raise ResponseNotFound(response_id)

    # -- conversations -----------------------------------------------------------------

    @bounded
    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        async with self._connection() as conn:
            await conversations.insert(conn, conversation)
            return await conversations.append(conn, conversation.project, conversation.id, items)

    @bounded
    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        async with self._connection() as conn:
            return await conversations.load(conn, project, conversation_id)

    @bounded
    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        async with self._connection() as conn:
            return await conversations.update(conn, project, conversation_id, metadata)

    @bounded
    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        async with self._connection() as conn:
            await conversations.delete(conn, project, conversation_id)

    @bounded
    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        async with self._connection() as conn:
            return await conversations.append(conn, project, conversation_id, items)

    @bounded
    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        async with self._connection() as conn:
            return await conversations.page(conn, project, conversation_id, after, limit, order)

    @bounded
    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        async with self._connection() as conn:
            return await conversations.all_items(conn, project, conversation_id)

    @bounded
    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        async with self._connection() as conn:
            return await conversations.get_item(conn, project, conversation_id, item_id)

    @bounded
    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        async with self._connection() as conn:
            await conversations.delete_item(conn, project, conversation_id, item_id)

    @bounded
    async def fail_stale(self, before: float, error: Item) -> int:
        async with self._connection() as conn:
            cursor = await conn.execute(
                "UPDATE responses SET status = 'failed', completed_at = %s,"
                " response = jsonb_set(response, '{error}', %s)"
                " WHERE status IN ('in_progress', 'queued') AND created_at < %s",
                (time.time(), Jsonb(error), before),
            )
            return cursor.rowcount

    @bounded
    async def beat(self, instance_id: str, at: float) -> None:
        async with self._connection() as conn:
            await conn.execute(HEARTBEATS.beat, (instance_id, at))

    @bounded
    async def fail_orphaned(self, alive_since: float, error: Item) -> int:
        async with self._connection() as conn:
            cursor = await conn.execute(
                HEARTBEATS.fail_orphaned, (time.time(), Jsonb(error), alive_since)
            )
            await conn.execute(HEARTBEATS.forget, (alive_since,))
            return cursor.rowcount

    @bounded
    async def prune(self, before: float, limit: int) -> Pruned:
        async with self._connection() as conn:
            return await admin.prune(conn, before, limit)

    @bounded
    async def usage(self, project: str | None, since: float) -> list[UsageRow]:
        async with self._connection() as conn:
            return await admin.usage(conn, project, since)

    @bounded
    async def record_usage(self, record: UsageRecord) -> None:
        async with self._connection() as conn:
            await admin.record_usage(conn, record)

    @bounded
    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        async with self._connection() as conn:
            await admin.append_events(conn, project, response_id, events)

    @bounded
    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        async with self._connection() as conn:
            return await admin.events_after(conn, project, response_id, after, limit)

    @bounded
    async def prune_events(self, before: float) -> int:
        async with self._connection() as conn:
            return await admin.prune_events(conn, before)

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store of ``project``, in this database."""
        runner = PostgresRunner(self._agent_transaction)
        return AgentStore(runner, project, cursor_key=self._cursor_key)

    @bounded
    async def _agent_transaction(self, operation: OperationFactory) -> Any:
        async with self._connection() as conn:
            return await drive_async(conn, operation())

    @bounded
    async def shared_secret(self, name: str, candidate: str) -> str:
        async with self._connection() as conn:
            return await admin.shared_secret(conn, name, candidate)

    @bounded
    async def create_key(self, key: ApiKey) -> None:
        async with self._connection() as conn:
            await admin.insert_key(conn, key)

    @bounded
    async def find_key(self, secret_hash: str) -> ApiKey | None:
        async with self._connection() as conn:
            return await admin.find_key(conn, secret_hash)

    @bounded
    async def list_keys(self, project: str | None = None) -> list[ApiKey]:
        async with self._connection() as conn:
            return await admin.list_keys(conn, project)

    @bounded
    async def revoke_key(self, key_id: str) -> ApiKey:
        async with self._connection() as conn:
            return await admin.revoke_key(conn, key_id, time.time())

    @bounded
    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.execute("SELECT 1")

    async def close(self) -> None:
        await self._pool.close()
