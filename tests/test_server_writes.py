"""The server's connections join the writes made in one step of the event loop."""

from __future__ import annotations

import asyncio

import pytest

from gateway.edge.http_protocol import COALESCE_LIMIT, CoalescedWrites
from gateway.edge.json_response import sse
from gateway.turn.events import StreamEvent
from gateway.turn.streaming import Outbox

pytestmark = [pytest.mark.anyio, pytest.mark.unit]


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self.writes))

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1234) if name == "peername" else default


async def test_a_response_head_and_body_leave_in_one_write() -> None:
    inner = RecordingTransport()
    transport = CoalescedWrites(inner, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"{}")
    assert inner.writes == [] and transport.get_write_buffer_size() == 21
    await asyncio.sleep(0)
    assert inner.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    transport.writelines([b"a", b"b"])
    await asyncio.sleep(0)
    assert inner.writes[1:] == [b"ab"]
    assert transport.get_extra_info("peername") == ("127.0.0.1", 1234)


async def test_closing_sends_what_is_held_and_aborting_drops_it() -> None:
    inner = RecordingTransport()
    transport = CoalescedWrites(inner, asyncio.get_running_loop())
    transport.write(b"last words")
    transport.close()
    assert inner.writes == [b"last words"] and inner.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left
    assert inner.writes == [b"last words"]

    inner = RecordingTransport()
    transport = CoalescedWrites(inner, asyncio.get_running_loop())
    transport.write(b"never sent")
    transport.abort()
    await asyncio.sleep(0)
    assert inner.writes == [] and inner.aborted


async def test_a_large_body_is_not_held_back() -> None:
    inner = RecordingTransport()
    transport = CoalescedWrites(inner, asyncio.get_running_loop())
    transport.write(b"head")
    transport.write(b"x" * COALESCE_LIMIT)
    assert inner.writes == [b"head" + b"x" * COALESCE_LIMIT]


async def test_nothing_is_written_to_a_connection_already_closing() -> None:
    inner = RecordingTransport()
    transport = CoalescedWrites(inner, asyncio.get_running_loop())
    transport.write(b"late")
    inner.closed = True  # the peer went away meanwhile
    await asyncio.sleep(0)
    assert inner.writes == []


async def test_a_streams_waiting_events_leave_together_and_none_ends_them() -> None:
    outbox = Outbox()
    batches = outbox.drain()
    a, b, c = (StreamEvent("response.output_text.delta", name) for name in (b"a", b"b", b"c"))
    outbox.put(a)
    outbox.put(b)
    assert await anext(batches) == [a, b]
    assert outbox.flowing.is_set() is False  # set once the edge asks for more
    later = asyncio.ensure_future(anext(batches))
    await asyncio.sleep(0)
    assert not later.done() and outbox.flowing.is_set()
    outbox.put(c)
    outbox.put(None)
    assert await later == [c]
    with pytest.raises(StopAsyncIteration):
        await anext(batches)


def test_events_are_framed_as_server_sent_events_in_one_piece() -> None:
    events = [StreamEvent("a.b", b'{"n":1}'), StreamEvent("c", b'{"n":2}')]
    assert sse(events) == b'event: a.b\ndata: {"n":1}\n\nevent: c\ndata: {"n":2}\n\n'
