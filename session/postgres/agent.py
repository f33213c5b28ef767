"""The agent Store's runner on PostgreSQL: a transaction, retried after a lost race."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from ..agent_store.store import OperationFactory

ATTEMPTS = 3


class PostgresRunner:
    """Runs operations through ``transaction``; a unique violation means another instance
    stored the same new id first, and running again finds it stored."""

    def __init__(self, transaction: Callable[[OperationFactory], Awaitable[Any]]) -> None:
        self._transaction = transaction

    async def __call__(self, operation: OperationFactory, *, write: bool) -> Any:
        for attempt in range(ATTEMPTS):
            try:
                return await self._transaction(operation)
            except psycopg.IntegrityError:
                if attempt == ATTEMPTS - 1:
                    raise
        return None
