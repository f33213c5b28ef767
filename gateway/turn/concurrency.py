"""What turns running at once share: per-key locks, cancellable tasks and fair slots.

- :class:`KeyedLocks` serialises the turns of one conversation; a lock exists only while
  someone holds or awaits it.
- :class:`CancellableTurns` holds the tasks running this instance's streamed and
  background turns, by response id, which their clients may cancel.
- :class:`FairSlots` shares a provider's connections fairly between projects' background
  turns. Background turns of one provider may hold at most ``total`` of its connections
  at once, and one project at most ``per_project`` of them: the rest of the pool stays
  free for turns a client waits for, and one project's backlog cannot hold every
  background slot. A turn past its share waits, ``queued``; a freed slot goes to the
  waiting project that holds the fewest (among equals, the one served longest ago), each
  project's turns in the order they came.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyedLocks:
    """``async with locks.hold(key)`` serialises the holders of one key."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


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


class FairSlots:
    """The background slots of one provider, shared fairly between projects."""

    def __init__(self, total: int, per_project: int) -> None:
        self.total = total
        self.per_project = per_project
        self._busy = 0
        self._held: Counter[str] = Counter()
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._served: dict[str, int] = {}
        self._grants = itertools.count()

    @asynccontextmanager
    async def slot(self, project: str) -> AsyncIterator[None]:
        """Hold one of the slots while the block runs; wait for one first if none is free."""
        await self._acquire(project)
        try:
            yield
        finally:
            self._release(project)

    def _free_for(self, project: str) -> bool:
        return self._busy < self.total and self._held[project] < self.per_project

    async def _acquire(self, project: str) -> None:
        if not self._waiting.get(project) and self._free_for(project):
            self._take(project)
            return
        granted = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(project, deque()).append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.cancelled():  # still in line: leave it
                self._leave(project, granted)
            else:  # granted as it was cancelled: hand the slot on
                self._release(project)
            raise

    def _take(self, project: str) -> None:
        self._busy += 1
        self._held[project] += 1
        self._served[project] = next(self._grants)

    def _leave(self, project: str, granted: asyncio.Future[None]) -> None:
        line = self._waiting.get(project)
        if line is not None and granted in line:
            line.remove(granted)
            if not line:
                del self._waiting[project]
        self._forget_if_idle(project)

    def _release(self, project: str) -> None:
        self._busy -= 1
        self._held[project] -= 1
        if not self._held[project]:
            del self._held[project]
        self._grant()
        self._forget_if_idle(project)

    def _forget_if_idle(self, project: str) -> None:
        if not self._held[project] and project not in self._waiting:
            self._served.pop(project, None)

    def _grant(self) -> None:
        while self._busy < self.total:
            candidates = [p for p in self._waiting if self._held[p] < self.per_project]
            if not candidates:
                return
            project = min(candidates, key=lambda p: (self._held[p], self._served.get(p, -1)))
            line = self._waiting[project]
            granted = line.popleft()
            if not line:
                del self._waiting[project]
            if granted.done():  # cancelled while in line
                continue
            self._take(project)
            granted.set_result(None)
