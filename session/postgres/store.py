"""The shared backend: PostgreSQL through psycopg 3 and a connection pool.

Several gateway instances may use one database: every save runs its policy checks and
its write in one transaction, and the chain is read with one recursive query. A database
that is down makes calls raise :class:`StoreUnavailable`; the pool reconnects by itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..agent_store import AgentStore, CursorKey
from ..agent_store.store import OperationFactory
from ..chain import DEFAULT_MAX_DEPTH, chain_turn
from ..errors import InvalidData, ResponseNotFound, SaveConflict, StoreUnavailable
from ..files.pgvector import NO_PGVECTOR, backfill, found_index
from ..models import ChainTurn, Item, ItemPage, ResolvedChain, StoredResponse
from ..paging import Order, page_items
from ..policy import ExistingTurn, check_save
from ..sql import POSTGRES, drive_async, responses
from ..sql.conversations import append
from ..sql.store import Make, SQLStore
from ..turn_cache import TurnCache, resolve_cached
from .agent import PostgresRunner
from .deadline import bounded
from .schema import ENABLE_PGVECTOR, MIGRATION_LOCK, migrate

T = TypeVar("T")
_SELECT = POSTGRES.render(responses.SELECT)
_PARENT_AND_STATUS = POSTGRES.render(responses.parent_and_status(POSTGRES))
_INSERT = POSTGRES.render(responses.INSERT_NEW)
_UPSERT = POSTGRES.render(responses.UPSERT)
_DELETION_GENERATION = responses.DELETION_GENERATION
_INPUT_ITEMS = POSTGRES.render(responses.INPUT_ITEMS)
_CHAIN = POSTGRES.render(responses.CHAIN_POSTGRES)


def _row(record: StoredResponse) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    return {
        "project": record.project,
        "id": record.id,
        "previous_response_id": record.previous_response_id,
        "conversation_id": record.conversation_id,
        "created_at": record.created_at,
        "completed_at": record.completed_at,
        "status": record.status,
        "request": Jsonb(data["request"]),
        "response": Jsonb(data["response"]),
        "metadata": Jsonb(data["metadata"]),
        "instance_id": record.instance_id,
        "timeline": None if record.timeline is None else Jsonb(data["timeline"]),
    }


def _record(row: tuple[Any, ...]) -> StoredResponse:
    return StoredResponse.model_validate(dict(zip(responses.COLUMN_NAMES, row, strict=True)))


class PostgresStore(SQLStore):
    """A store in one PostgreSQL database, shared by any number of gateway instances."""

    dialect = POSTGRES

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
                await self._find_vector_index(conn)
                # Turns saved from now on cannot have been deleted at an earlier generation.
                cursor = await conn.execute(_DELETION_GENERATION)
                found = await cursor.fetchone()
                assert found is not None
                self._cache.generation = int(found[0])
            self._ready = True

    async def _find_vector_index(self, conn: AsyncConnection[tuple[Any, ...]]) -> None:
        """pgvector's column, added now if the server was given pgvector since the last
        start, and the chunks kept before it moved into it."""
        async with conn.transaction():
            index, self.vector_index_problem = await drive_async(conn, found_index())
        if index is None and self.vector_index_problem != NO_PGVECTOR:
            async with conn.transaction():  # no table lock at a start that changes nothing
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                await conn.execute(ENABLE_PGVECTOR)
                index, self.vector_index_problem = await drive_async(conn, found_index())
        if index is not None:
            moved = 1
            while moved:
                async with conn.transaction():
                    moved = await drive_async(conn, backfill(index))
        self.vector_index = index

    async def _run(self, make: Make[T]) -> T:
        async with self._connection() as conn:
            result: T = await drive_async(conn, make())
            return result

    @bounded
    async def _read(self, make: Make[T]) -> T:
        return await self._run(make)

    @bounded
    async def _read_now(self, make: Make[T]) -> T:
        return await self._run(make)

    @bounded
    async def _write(self, make: Make[T], *, durable: bool = True) -> T:
        return await self._run(make)  # every commit is synced (synchronous_commit)

    @bounded
    async def get(self, project: str, response_id: str) -> StoredResponse:
        async with self._connection() as conn:
            cursor = await conn.execute(_SELECT, {"project": project, "id": response_id})
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
                    cursor = await conn.execute(_PARENT_AND_STATUS, row)
                    found = await cursor.fetchone()
                    existing = None if found is None else ExistingTurn(found[0], found[1])
                check_save(record, existing, overwrite=overwrite)
                if conversation_items is not None and record.conversation_id is not None:
                    operation = append(
                        POSTGRES, record.project, record.conversation_id, conversation_items
                    )
                    await drive_async(conn, operation)
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
            cursor = await conn.execute(_DELETION_GENERATION)
            found = await cursor.fetchone()
        assert found is not None
        return int(found[0])

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        return await self._run(lambda: responses.existing_ids(POSTGRES, project, ids))

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        """Up to ``limit`` turns of the chain that ends at ``head``, in no particular order."""
        params = {"project": project, "id": head, "max_depth": limit - 1}
        async with self._connection() as conn:
            cursor = await conn.execute(_CHAIN, params)
            found = await cursor.fetchall()
        return [ChainTurn(row[0], row[1], row[2], row[3], row[4], row[5]) for row in found]

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
            cursor = await conn.execute(_INPUT_ITEMS, {"project": project, "id": response_id})
            row = await cursor.fetchone()
        if row is None:
            raise ResponseNotFound(response_id)
        return page_items(row[0], after=after, before=before, limit=limit, order=order)

    def agent(self, project: str = "default") -> AgentStore:
        """The agent Store of ``project``, in this database."""
        runner = PostgresRunner(self._agent_transaction)
        return AgentStore(runner, project, cursor_key=self._cursor_key)

    @bounded
    async def _agent_transaction(self, operation: OperationFactory) -> Any:
        async with self._connection() as conn:
            return await drive_async(conn, operation())

    @bounded
    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.execute("SELECT 1")

    async def close(self) -> None:
        await self._pool.close()
