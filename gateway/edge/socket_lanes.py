"""The lanes of one WebSocket: what each remembers and how many there may be.

A ``response.create`` frame with a ``stream_id`` joins the lane of that name: the frames of
one lane run one after another, first in first out, and different lanes run at the same
time, at most ``server.websocket_max_in_flight`` responses at once. A connection may name at
most ``server.websocket_max_streams`` lanes in its life. Frames without a ``stream_id`` form
the unnamed lane, which the connection serves before it reads the next frame.

Each lane remembers its latest response and the whole context that led to it, so that a
continuation sends only its new items. A continuation from a lane's own latest response
takes it out of the lane (a failure leaves nothing to continue from there; a success puts
the new response in its place); one from another lane's latest response forks it and leaves
that lane as it was.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from session import Item

from .socket_errors import stream_limit


@dataclass
class LastResponse:
    """A lane's latest response and the whole context that led to it."""

    id: str
    items: list[Item]


@dataclass
class Lane:
    """One ordered lane: its name (``None``: the unnamed one), its memory, its queue."""

    name: str | None
    last: LastResponse | None = None
    queue: deque[dict[str, Any]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        return self.worker is not None or bool(self.queue)


class Lanes:
    """The lanes a connection has named, and the unnamed one."""

    def __init__(self, most_streams: int) -> None:
        self._most = most_streams
        self._lanes: dict[str | None, Lane] = {None: Lane(None)}

    @property
    def unnamed(self) -> Lane:
        return self._lanes[None]

    def named(self, name: str) -> Lane:
        """The lane called ``name``, opened if new; past the connection's limit an
        :class:`APIError` ``websocket_stream_limit_reached``."""
        lane = self._lanes.get(name)
        if lane is None:
            if len(self._lanes) > self._most:  # the unnamed lane is not counted
                raise stream_limit(self._most)
            lane = self._lanes[name] = Lane(name)
        return lane

    def continued(self, lane: Lane, previous_response_id: object) -> list[Item] | None:
        """The context ``previous_response_id`` names if a lane remembers it, else ``None``.

        From ``lane``'s own latest response it is taken out of the lane; from another
        lane's it is copied (a fork), that lane keeping it.
        """
        own = lane.last
        if own is not None and own.id == previous_response_id:
            lane.last = None
            return own.items
        for other in self._lanes.values():
            if other.last is not None and other.last.id == previous_response_id:
                return list(other.last.items)
        return None

    @property
    def busy(self) -> bool:
        """Whether any lane has a response running or waiting."""
        return any(lane.busy for lane in self._lanes.values())

    def workers(self) -> list[asyncio.Task[None]]:
        return [lane.worker for lane in self._lanes.values() if lane.worker is not None]

    def drop_queued(self) -> list[tuple[Lane, dict[str, Any]]]:
        """Take every frame still waiting out of its lane (the connection is ending)."""
        dropped = []
        for lane in self._lanes.values():
            while lane.queue:
                dropped.append((lane, lane.queue.popleft()))
        return dropped
