"""Fair shares of a provider's connections for background turns.

Background turns of one provider may hold at most ``total`` of its connections at once,
and one project at most ``per_project`` of them: the rest of the pool stays free for
turns a client waits for, and one project's backlog cannot hold every background slot.
A turn past its share waits, ``queued``; a freed slot goes to the waiting project that
holds the fewest (among equals, the one served longest ago), each project's turns in
the order they came.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


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
