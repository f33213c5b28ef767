"""The embedded default backend: one SQLite file, safe for several processes at once."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import sqlite_utils

from . import sqlite_conversations as conversations
from .chain import DEFAULT_MAX_DEPTH, assemble_chain
from .conversations import Conversation
from .errors import ResponseNotFound, StoreUnavailable
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
from .policy import check_save
from .sqlite_schema import migrate

T = TypeVar("T")

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
)
_COLUMNS = ", ".join(_COLUMN_NAMES)
_PLACEHOLDERS = ", ".join("?" for _ in _COLUMN_NAMES)

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


def _to_row(record: StoredResponse) -> tuple[Any, ...]:
    return (
        record.project,
        record.id,
        record.previous_response_id,
        record.conversation_id,
        record.created_at,
        record.completed_at,
        record.status,
        record.request.model_dump_json(),
        record.response.model_dump_json(),
        json.dumps(record.metadata),
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
    )


class SQLiteStore:
    """A store in one SQLite file (WAL journal, busy timeout, versioned schema).

    One connection serves the store; calls run on worker threads, one at a time, so the
    event loop never blocks on the disk. Writes take the file's write lock first
    (``BEGIN IMMEDIATE``), so the save policy sees what other processes committed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
        busy_timeout_ms: int = 5000,
    ) -> None:
        self._path = None if str(path) == ":memory:" else Path(path)
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        self.db = sqlite_utils.Database(conn, execute_plugins=False)
        self.schema_version = migrate(self.db)
        self._identity = self._file_identity()
        self._max_depth = max_depth
        self._lock = threading.Lock()

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (tests trace its statements)."""
        return self.db.conn

    def _file_identity(self) -> tuple[int, int] | None:
        if self._path is None:
            return None
        try:
            stat = os.stat(self._path)
        except OSError:
            return (-1, -1)
        return (stat.st_dev, stat.st_ino)

    def _check_file(self) -> None:
        """Refuse to go on when the file was removed or replaced under the open connection.

        SQLite would keep writing to the unlinked file and report success: every such
        write would be lost at the next start.
        """
        if self._identity is not None and self._file_identity() != self._identity:
            raise StoreUnavailable(
                f"The session database file {self._path} was removed or replaced; "
                "restore it or restart the gateway."
            )

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    self._check_file()
                    return fn(self.db.conn)
                except sqlite3.IntegrityError:
                    raise
                except (sqlite3.OperationalError, sqlite3.DatabaseError) as error:
                    raise StoreUnavailable(
                        f"The session database cannot be used ({error})."
                    ) from None
                except sqlite3.ProgrammingError:
                    raise StoreUnavailable("The session database is closed.") from None

        return await anyio.to_thread.run_sync(locked)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                self._check_file()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

        return await self._run(transaction)

    @staticmethod
    def _select(conn: sqlite3.Connection, project: str, response_id: str) -> StoredResponse | None:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM responses WHERE project = ? AND id = ?",
            (project, response_id),
        ).fetchone()
        return None if row is None else _from_row(row)

    async def get(self, project: str, response_id: str) -> StoredResponse:
        record = await self._run(lambda conn: self._select(conn, project, response_id))
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
            check_save(
                record,
                self._select(conn, record.project, record.id),
                overwrite=overwrite,
            )
            if conversation_items is not None and record.conversation_id is not None:
                conversations.append(
                    conn, record.project, record.conversation_id, conversation_items
                )
            conn.execute(
                f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES ({_PLACEHOLDERS})", row
            )

        await self._write(write)

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        def read(conn: sqlite3.Connection) -> list[Any]:
            params = {"project": project, "id": response_id, "limit": self._max_depth + 1}
            return conn.execute(_CHAIN_SQL, params).fetchall()

        rows = await self._run(read)
        turns = {
            row[0]: ChainTurn(row[0], row[1], row[2], json.loads(row[3]), json.loads(row[4]))
            for row in rows
        }
        return assemble_chain(response_id, turns, self._max_depth)

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

        if await self._write(remove) == 0:
            raise ResponseNotFound(response_id)

    # -- conversations -----------------------------------------------------------------

    async def create_conversation(
        self, conversation: Conversation, items: list[Item]
    ) -> list[Item]:
        def create(conn: sqlite3.Connection) -> list[Item]:
            conversations.insert(conn, conversation)
            return conversations.append(conn, conversation.project, conversation.id, items)

        return await self._write(create)

    async def get_conversation(self, project: str, conversation_id: str) -> Conversation:
        return await self._run(lambda c: conversations.load(c, project, conversation_id))

    async def update_conversation(
        self, project: str, conversation_id: str, metadata: dict[str, str]
    ) -> Conversation:
        return await self._write(
            lambda c: conversations.update(c, project, conversation_id, metadata)
        )

    async def delete_conversation(self, project: str, conversation_id: str) -> None:
        await self._write(lambda c: conversations.delete(c, project, conversation_id))

    async def append_items(
        self, project: str, conversation_id: str, items: list[Item]
    ) -> list[Item]:
        return await self._write(lambda c: conversations.append(c, project, conversation_id, items))

    async def list_items(
        self,
        project: str,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        return await self._run(
            lambda c: conversations.page(c, project, conversation_id, after, limit, order)
        )

    async def conversation_items(self, project: str, conversation_id: str) -> list[Item]:
        return await self._run(lambda c: conversations.all_items(c, project, conversation_id))

    async def get_item(self, project: str, conversation_id: str, item_id: str) -> Item:
        return await self._run(
            lambda c: conversations.get_item(c, project, conversation_id, item_id)
        )

    async def delete_item(self, project: str, conversation_id: str, item_id: str) -> None:
        await self._write(lambda c: conversations.delete_item(c, project, conversation_id, item_id))

    async def fail_stale(self, before: float, error: Item) -> int:
        def sweep(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "UPDATE responses SET status = 'failed', completed_at = ?,"
                " response = json_set(response, '$.error', json(?))"
                " WHERE status IN ('in_progress', 'queued') AND created_at < ?",
                (time.time(), json.dumps(error), before),
            )
            return cursor.rowcount

        return await self._write(sweep)

    async def ping(self) -> None:
        await self._run(lambda conn: conn.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        with self._lock:
            self.db.conn.close()
