"""A background stream's event log keeps every event, in order, however its batches and its
end fall."""

from __future__ import annotations

import asyncio

import pytest

from gateway.turn.event_log import EventLog

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


class SlowEvents:
    """Kept events whose first write waits until ``release`` is set, as a busy store's may."""

    def __init__(self) -> None:
        self.kept: list[tuple[int, str]] = []
        self.writing = asyncio.Event()
        self.release = asyncio.Event()
        self.changed = asyncio.Condition()

    async def append_events(
        self, project: str, response_id: str, events: list[tuple[int, str]]
    ) -> None:
        if not self.writing.is_set():
            self.writing.set()
            await self.release.wait()
        async with self.changed:
            self.kept += events
            self.changed.notify_all()

    async def until_kept(self, count: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: len(self.kept) >= count)

    async def events_after(
        self, project: str, response_id: str, after: int, limit: int = 1000
    ) -> list[tuple[int, str]]:
        return [(seq, data) for seq, data in self.kept if seq > after][:limit]


async def test_a_stream_ending_while_a_batch_is_written_keeps_that_batch() -> None:
    store = SlowEvents()
    log = EventLog(store, "p", "resp_1")
    for seq in range(3):
        log.add(seq, b'{"type": "response.output_text.delta"}')
    await store.writing.wait()  # the first batch is being written
    for seq in range(3, 6):
        log.add(seq, b'{"type": "response.completed"}')
    closing = asyncio.create_task(log.close())
    await asyncio.sleep(0)
    store.release.set()
    await closing
    assert [seq for seq, _ in store.kept] == list(range(6))


async def test_a_cancelled_close_still_writes_what_is_left() -> None:
    store = SlowEvents()
    log = EventLog(store, "p", "resp_1")
    log.add(0, b'{"type": "response.created"}')
    await store.writing.wait()
    log.add(1, b'{"type": "response.completed"}')
    closing = asyncio.create_task(log.close())
    await asyncio.sleep(0)
    closing.cancel()
    store.release.set()
    with pytest.raises(asyncio.CancelledError):
        await closing
    await store.until_kept(2)  # the writer goes on by itself
    assert [seq for seq, _ in store.kept] == [0, 1]
