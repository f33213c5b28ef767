"""The tasks running this instance's background turns, which their clients may cancel."""

from __future__ import annotations

import asyncio


class CancellableTurns:
    """Tasks by response id; :meth:`cancel` stops one and remembers that a client did."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()

    def add(self, response_id: str, task: asyncio.Task[None]) -> None:
        self._tasks[response_id] = task
        task.add_done_callback(lambda _: self._forget(response_id))

    def _forget(self, response_id: str) -> None:
        self._tasks.pop(response_id, None)
        self._cancelled.discard(response_id)

    def tasks(self) -> set[asyncio.Task[None]]:
        return set(self._tasks.values())

    def cancelled_by_client(self, response_id: str) -> bool:
        """Whether the task ends because its client cancelled it (not a shutdown)."""
        return response_id in self._cancelled

    async def cancel(self, response_id: str) -> bool:
        """Cancel the turn if it runs here; True once its task has ended (stored)."""
        task = self._tasks.get(response_id)
        if task is None:
            return False
        self._cancelled.add(response_id)
        task.cancel()
        await asyncio.wait({task})
        return True
