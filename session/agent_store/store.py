"""The agent Store's Python API, bound to one project, on any session backend."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

from ..errors import SessionError, StoreUnavailable
from ..sql import Operation, drive
from . import calls, state
from . import messages as message_ops
from . import operations as ops
from .cursors import CursorKey, Cursors
from .errors import StoreError
from .models import AgentConversation, Message, NewMessage, Page

OperationFactory = Callable[[], Operation]


def store_time() -> float:
    """Now, in whole milliseconds: what ``createdAt``/``updatedAt`` show is what is stored,
    so that listings order equal times by id alone."""
    return math.floor(time.time() * 1000) / 1000


class Runner(Protocol):
    """Runs an operation in one transaction of a backend (again from the start if asked)."""

    async def __call__(self, operation: OperationFactory, *, write: bool) -> Any: ...


class SQLiteRunner:
    """Runs on a SQLite store's connections: writes under its write lock."""

    def __init__(self, db: Any) -> None:
        self._db = db  # session.sqlite.connections.SQLiteConnections

    async def __call__(self, operation: OperationFactory, *, write: bool) -> Any:
        def call(conn: sqlite3.Connection) -> Any:
            return drive(conn, operation())

        return await (self._db.write(call) if write else self._db.read(call))


class MemoryRunner:
    """An in-memory SQLite database for the memory backend; calls never await.

    ``create_schema`` makes its tables (the memory backend gives it the SQLite file's)."""

    def __init__(self, create_schema: Callable[[sqlite3.Connection], object]) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None)
        create_schema(self._conn)

    async def __call__(self, operation: OperationFactory, *, write: bool) -> Any:
        self._conn.execute("BEGIN")
        try:
            result = drive(self._conn, operation())
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        return result

    def close(self) -> None:
        self._conn.close()


@asynccontextmanager
async def _backend_errors() -> AsyncIterator[None]:
    """The backend's own failures, as :class:`StoreError` too."""
    try:
        yield
    except StoreUnavailable as error:
        raise StoreError("Unavailable", error.message, error=error.code) from None
    except SessionError as error:
        raise StoreError("UnknownError", error.message, error=error.code) from None


class AgentStore:
    """Conversations and messages of one project, with their state and session bindings.

    ``cursor_key`` signs the paging cursors; a backend keeps one for all its projects."""

    def __init__(self, runner: Runner, project: str = "default", *, cursor_key: CursorKey) -> None:
        self._runner = runner
        self.project = project
        self._cursor_key = cursor_key

    async def _run(self, operation: OperationFactory, *, write: bool) -> Any:
        async with _backend_errors():
            return await self._runner(operation, write=write)

    async def _cursors(self) -> Cursors:
        async with _backend_errors():
            return await self._cursor_key.cursors()

    async def create_conversation(
        self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> AgentConversation:
        now = store_time()
        result: AgentConversation = await self._run(
            lambda: ops.create_conversation(self.project, conversation_id, metadata, now),
            write=True,
        )
        return result

    async def get_conversation(self, conversation_id: str) -> AgentConversation | None:
        result: AgentConversation | None = await self._run(
            lambda: ops.get_conversation(self.project, conversation_id), write=False
        )
        return result

    async def list_conversations(self, limit: int = 20, cursor: str | None = None) -> Page:
        """Most recently updated first, then by id descending; ``cursor`` from the page before."""
        cursors = await self._cursors()
        result: Page = await self._run(
            lambda: ops.list_conversations(self.project, limit, cursor, cursors), write=False
        )
        return result

    async def update_conversation(
        self, conversation_id: str, metadata: dict[str, Any]
    ) -> AgentConversation:
        now = store_time()
        result: AgentConversation = await self._run(
            lambda: ops.update_conversation(self.project, conversation_id, metadata, now),
            write=True,
        )
        return result

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._run(lambda: ops.delete_conversation(self.project, conversation_id), write=True)

    async def append_messages(
        self, conversation_id: str, messages: list[NewMessage]
    ) -> list[Message]:
        now = store_time()
        result: list[Message] = await self._run(
            lambda: message_ops.append_messages(self.project, conversation_id, messages, now),
            write=True,
        )
        return result

    async def append_message(
        self,
        conversation_id: str,
        payload: Any,
        role: str | None = None,
        type: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_id: str | None = None,
    ) -> Message:
        message = NewMessage(payload, role, type, metadata, message_id)
        return (await self.append_messages(conversation_id, [message]))[0]

    async def get_message(self, message_id: str) -> Message | None:
        result: Message | None = await self._run(
            lambda: message_ops.get_message(self.project, message_id), write=False
        )
        return result

    async def list_messages(
        self, conversation_id: str, order: str = "asc", limit: int = 50, cursor: str | None = None
    ) -> Page:
        cursors = await self._cursors()
        result: Page = await self._run(
            lambda: message_ops.list_messages(
                self.project, conversation_id, order, limit, cursor, cursors
            ),
            write=False,
        )
        return result

    async def update_message(self, message_id: str, /, **fields: Any) -> Message:
        """Replace the given fields (``role``, ``type``, ``payload``, ``metadata``) whole."""
        now = store_time()
        result: Message = await self._run(
            lambda: message_ops.update_message(self.project, message_id, fields, now), write=True
        )
        return result

    async def delete_message(self, message_id: str) -> None:
        await self._run(lambda: message_ops.delete_message(self.project, message_id), write=True)

    async def pop_message(self, conversation_id: str) -> Message | None:
        """Remove and return the latest message of a conversation, atomically."""
        now = store_time()
        result: Message | None = await self._run(
            lambda: message_ops.pop_message(self.project, conversation_id, now), write=True
        )
        return result

    async def clear_messages(self, conversation_id: str) -> None:
        now = store_time()
        await self._run(
            lambda: message_ops.clear_messages(self.project, conversation_id, now), write=True
        )

    async def state_get(self, conversation_id: str, key: str) -> Any:
        return await self._run(
            lambda: state.state_get(self.project, conversation_id, key), write=False
        )

    async def state_set(self, conversation_id: str, key: str, value: Any) -> None:
        await self._run(
            lambda: state.state_set(self.project, conversation_id, key, value), write=True
        )

    async def state_delete(self, conversation_id: str, key: str) -> None:
        await self._run(lambda: state.state_delete(self.project, conversation_id, key), write=True)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Run the framework adapters' operation ``name`` (see :mod:`.calls`)."""
        factory, write = calls.operation(self.project, name, args)
        return await self._run(factory, write=write)

    async def claude_session_binding(self, conversation_id: str) -> str:
        result: str = await self._run(
            lambda: state.session_binding(self.project, conversation_id), write=True
        )
        return result
