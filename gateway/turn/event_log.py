"""A background stream's events, kept in the store so a client can resume it anywhere.

The stream writes in batches (every ``interval`` seconds, and once at its end); a client
that resumes with ``starting_after=N`` reads what is kept after N, then polls for the
rest until the terminal event. Every event reaches it exactly once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import orjson

from session import SessionError, StoredResponse, StreamEvents, Turns

from .events import TERMINAL_TYPES, StreamEvent, terminal_event

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.05
POLL_SECONDS = 0.1


class ResumableStore(StreamEvents, Turns, Protocol):
    """A stream's kept events and the record they belong to."""


class EventLog:
    """Writes one stream's numbered events to the store behind it, in order."""

    def __init__(self, store: StreamEvents, project: str, response_id: str) -> None:
        self._store = store
        self._key = (project, response_id)
        self._pending: list[tuple[int, str]] = []
        self._closing = asyncio.Event()
        self._writer = asyncio.create_task(self._write_every(FLUSH_SECONDS))

    def add(self, seq: int, event: bytes) -> None:
        self._pending.append((seq, event.decode()))

    async def _write_every(self, interval: float) -> None:
        """Flush every ``interval`` seconds, one batch at a time, and once more at the end:
        a batch still being written when the stream ends is never cut off or overtaken."""
        while not self._closing.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._closing.wait()
            await self.flush()
        await self.flush()  # what was added while the last batch was written

    async def flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            await self._store.append_events(*self._key, batch)
        except SessionError as error:
            self._pending = batch + self._pending  # the next flush tries again
            logger.warning("events of %s not kept yet: %s", self._key[1], error.message)

    async def close(self) -> None:
        """Write what is left after the batch in flight; the writer finishes it even if
        the caller is cancelled meanwhile."""
        self._closing.set()
        await asyncio.shield(self._writer)


async def _ended_at(store: StreamEvents, record: StoredResponse, seq: int) -> bool:
    """Whether the kept event numbered ``seq`` is the stream's terminal event."""
    kept = await store.events_after(record.project, record.id, seq - 1, limit=1)
    return bool(kept) and kept[0][0] == seq and orjson.loads(kept[0][1])["type"] in TERMINAL_TYPES


async def resumed(
    store: ResumableStore, record: StoredResponse, after: int
) -> AsyncIterator[list[StreamEvent]]:
    """Every kept event after ``after``, then the live tail, then the end.

    If the response finished but its terminal event never arrived (its instance died),
    a terminal event made from the stored record closes the stream instead.
    """
    project, response_id = record.project, record.id
    quiet_after_finish = 0
    while True:
        kept = await store.events_after(project, response_id, after)
        events: list[StreamEvent] = []
        for seq, data in kept:
            events.append(StreamEvent(orjson.loads(data)["type"], data.encode()))
            after = seq
            if events[-1].terminal:
                yield events
                return
        if events:
            yield events
            quiet_after_finish = 0
            continue
        record = await store.get(project, response_id)
        if record.status not in ("queued", "in_progress"):
            quiet_after_finish += 1
            if quiet_after_finish > 3:  # its writer is gone: end from the stored record
                if not await _ended_at(store, record, after):
                    yield [terminal_event(record, after + 1)]
                return
        await asyncio.sleep(POLL_SECONDS)
