"""The streaming runtime: a streamed turn runs in a task of its own, owning its resources.

The task opens the turn (conversation lock, context) and the upstream stream, stores the
turn as ``in_progress``, then signals the request handler: until then any failure is a
plain HTTP error. After that every event is numbered, encoded once and queued for the
edge that frames it, and the turn ends with exactly one terminal event that tells the
truth: ``response.completed`` only once the finished turn is stored. A client that goes
away does not stop the task; a shutdown past its grace period cancels it, and the turn
is then stored as failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from prometheus_client import Gauge

from session import Item, SaveConflict, StoredResponse

from ..api.request_body import CreateResponseBody
from ..api.response_object import response_object
from ..upstream import TurnResult, UpstreamStream
from ..upstream.results import failed_result
from .concurrency import CancellableTurns
from .event_log import EventLog
from .events import TERMINAL_EVENTS, StreamEvent, numbered
from .lifecycle import Turn, TurnRunner, finished, save_finished, save_started, with_status

logger = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
FIRST_EVENTS_WAIT_SECONDS = 0.05
RETRIES = 60


class StreamedTurns:
    """The streamed turns in flight, so that shutdown can finish or fail each of them."""

    def __init__(self, active: Gauge) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._active = active
        self.running = CancellableTurns()  # the background ones, by response id

    async def start(
        self,
        runner: TurnRunner,
        body: CreateResponseBody,
        project: str,
        history: list[Item] | None = None,
    ) -> AsyncIterator[list[StreamEvent]]:
        """Open a streamed turn; return its events (those already waiting come together),
        or raise what stopped it opening."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(_consume_exception)
        outbox = Outbox()
        task = asyncio.create_task(
            _run(runner, self.running, body, project, history, ready, outbox.put, outbox.flowing)
        )
        self._tasks.add(task)
        self._active.inc()
        task.add_done_callback(self._done)
        await asyncio.shield(ready)
        return outbox.drain()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._active.dec()

    async def finish(self, grace: float) -> None:
        """Let streams finish for ``grace`` seconds, then cancel (and so fail) the rest."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning("shutdown: %d streamed turn(s) cut and stored as failed", len(pending))
            await asyncio.wait(pending)


def _consume_exception(future: asyncio.Future[None]) -> None:
    # The handler that awaited it may be gone with its client; the error is then moot.
    if not future.cancelled():
        future.exception()


class Outbox:
    """A stream's events, from the turn's task to the edge: those already waiting leave
    together (one write, not one each); ``None`` ends them. ``flowing`` is set each time
    the edge comes back for more: what it had is on its way."""

    def __init__(self) -> None:
        self.flowing = asyncio.Event()
        self._events: list[StreamEvent] = []
        self._ended = False
        self._waiter: asyncio.Future[None] | None = None

    def put(self, event: StreamEvent | None) -> None:
        if event is None:
            self._ended = True
        else:
            self._events.append(event)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def drain(self) -> AsyncIterator[list[StreamEvent]]:
        while True:
            if not self._events and not self._ended:
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
            if not self._events:
                return
            events, self._events = self._events, []
            yield events
            self.flowing.set()


async def _run(
    runner: TurnRunner,
    running: CancellableTurns,
    body: CreateResponseBody,
    project: str,
    history: list[Item] | None,
    ready: asyncio.Future[None],
    put: Callable[[StreamEvent | None], None],
    flowing: asyncio.Event,
) -> None:
    unsaved: StoredResponse | None = None
    try:
        async with (
            runner.turn(body, project, history) as turn,
            runner.open_upstream(turn, stream=True) as events,
        ):
            await save_started(runner.store, turn)
            if turn.record.request.background:  # a client may cancel it by its id
                task = asyncio.current_task()
                assert task is not None
                running.add(turn.record.id, task)
            ready.set_result(None)
            unsaved = await _pump(runner, running, turn, events, put, flowing)
    except BaseException as error:
        if ready.done():
            if isinstance(error, asyncio.CancelledError):
                raise
            logger.exception("a streamed turn (model %s) failed while closing", body.model)
            return
        if isinstance(error, Exception):
            ready.set_exception(error)
        else:
            ready.cancel()
            raise
    if unsaved is not None:
        await _store_failure(runner, unsaved)


async def _store_failure(runner: TurnRunner, record: StoredResponse) -> None:
    """Keep trying to replace the ``in_progress`` row by its failure while the store is down.

    The client has its ``response.failed`` already; this makes the store agree. Past the
    retries the sweep of stale turns does it.
    """
    for _ in range(RETRIES):
        await asyncio.sleep(RETRY_SECONDS)
        try:
            await runner.store.save(record, overwrite=True)
            return
        except SaveConflict:
            return  # finished meanwhile (by the sweep): nothing left to correct
        except Exception as error:
            logger.debug("response %s still not stored as failed: %s", record.id, error)
    logger.error("response %s stays in_progress until the sweep fails it", record.id)


async def _pump(
    runner: TurnRunner,
    running: CancellableTurns,
    turn: Turn,
    events: UpstreamStream,
    put: Callable[[StreamEvent | None], None],
    flowing: asyncio.Event,
) -> StoredResponse | None:
    """Relay the upstream's events; store the end; send the terminal event.

    Returns the failed record still to be stored when the store refused both the
    finished turn and its failure.
    """
    numbers = itertools.count()
    record = turn.record
    kept = None
    if record.request.background and turn.store:
        kept = EventLog(runner.store, record.project, record.id)

    def emit(event: dict[str, Any]) -> None:
        number = next(numbers)
        sent = numbered(event, number)
        put(sent)
        if kept is not None:
            kept.add(number, sent.data)

    # The same response object opens the stream twice: encoded once.
    started = orjson.Fragment(orjson.dumps(response_object(turn.record, store=turn.store)))
    emit({"type": "response.created", "response": started})
    emit({"type": "response.in_progress", "response": started})
    # Let the first events leave before the rest: an upstream whose whole answer is
    # already buffered would otherwise be relayed, stored and sent in one piece.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(FIRST_EVENTS_WAIT_SECONDS):
            await flowing.wait()
    result: TurnResult | None = None
    unsaved: StoredResponse | None = None
    cancelled = False
    try:
        async with asyncio.timeout(turn.max_stream_seconds):
            async for event in events:
                if isinstance(event, TurnResult):
                    result = event
                else:
                    emit(event)
    except TimeoutError:
        result = failed_result(
            f"The answer took longer than the limit of {turn.max_stream_seconds:g} seconds."
        )
    except asyncio.CancelledError:
        cancelled = True
        result = failed_result("The gateway shut down before the response was complete.")
        if running.cancelled_by_client(record.id):
            result = None
    except Exception:
        logger.exception("the stream of %s broke", turn.record.id)
    if cancelled and result is None:
        record = with_status(record, "cancelled")
    else:
        record = finished(record, result or failed_result("The response broke off."))
    try:
        await save_finished(runner.store, turn, record, started=True)
    except Exception as error:
        logger.error("streamed response %s could not be stored: %s", turn.record.id, error)
        reason = getattr(error, "message", type(error).__name__)
        record = finished(turn.record, failed_result(f"The response could not be stored: {reason}"))
        try:
            await save_finished(runner.store, turn, record, started=True)
        except Exception:
            unsaved = record if turn.store else None
    emit(
        {
            "type": TERMINAL_EVENTS[record.status],
            "response": response_object(record, store=turn.store),
        }
    )
    put(None)
    if kept is not None:
        await kept.close()
    if cancelled:
        raise asyncio.CancelledError
    return unsaved
