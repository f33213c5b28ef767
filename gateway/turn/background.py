"""Background responses: ``background: true`` returns ``queued`` at once; a task runs the turn.

The task opens the turn (conversation lock, context) and stores it ``queued``; until then
any failure is the create request's own HTTP error. It waits for a background slot of
its provider (see :mod:`gateway.turn.concurrency`), then stores ``in_progress``, calls
the upstream and stores how it ended. ``POST /v1/responses/{id}/cancel`` cancels the task
(the turn is stored ``cancelled``); a shutdown past its grace period cancels the rest
(stored ``failed``). A turn whose instance died is failed once that instance's
heartbeat goes stale (see :func:`gateway.turn.upkeep.keep_alive`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager

from session import SaveConflict, StoredResponse

from ..api.request_body import CreateResponseBody
from ..config import ProviderSettings
from ..errors import APIError
from ..upstream import TurnResult, UpstreamError
from ..upstream.results import failed_result
from .concurrency import CancellableTurns, FairSlots
from .lifecycle import Turn, TurnRunner, finished, save_finished, save_started, with_status

logger = logging.getLogger(__name__)


class BackgroundTurns:
    """The background turns this instance runs, by response id."""

    def __init__(self, providers: Mapping[str, ProviderSettings]) -> None:
        self.running = CancellableTurns()
        self._providers = providers
        self._shares: dict[str, FairSlots] = {}  # by provider, made on first use

    async def start(
        self, runner: TurnRunner, body: CreateResponseBody, project: str
    ) -> StoredResponse:
        """Open the turn and store it ``queued``; return that record once it is stored."""
        ready: asyncio.Future[StoredResponse] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._run(runner, body, project, ready))
        try:
            record = await asyncio.shield(ready)
        except BaseException:
            task.cancel()
            raise
        self.running.add(record.id, task)
        return record

    async def finish(self, grace: float) -> None:
        """Let turns finish for ``grace`` seconds, then cancel (and so fail) the rest."""
        tasks = self.running.tasks()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            logger.warning("shutdown: %d background turn(s) stopped, stored failed", len(pending))
            await asyncio.wait(pending)

    async def _run(
        self,
        runner: TurnRunner,
        body: CreateResponseBody,
        project: str,
        ready: asyncio.Future[StoredResponse],
    ) -> None:
        try:
            async with runner.turn(body, project) as turn:
                turn.record = with_status(turn.record, "queued")
                await save_started(runner.store, turn)
                ready.set_result(turn.record)
                await self._complete(runner, turn)
        except Exception as error:
            if not ready.done():
                ready.set_exception(error)  # the create request reports it
                return
            logger.exception("background turn (model %s) failed", body.model)
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise

    def _slot(self, turn: Turn) -> AbstractAsyncContextManager[None]:
        """A slot of the turn's provider for the turn's project (none needed for ``echo``)."""
        provider = self._providers[turn.provider]
        if not provider.wire.http:
            return contextlib.nullcontext()
        slots = self._shares.get(turn.provider)
        if slots is None:
            shares = provider.background_shares()
            slots = self._shares[turn.provider] = FairSlots(*shares)
        return slots.slot(turn.record.project)

    async def _complete(self, runner: TurnRunner, turn: Turn) -> None:
        record = turn.record
        try:
            async with self._slot(turn):
                turn.record = record = with_status(record, "in_progress")
                try:
                    await runner.store.save(record, overwrite=True)
                except SaveConflict:
                    logger.info("background response %s was finished elsewhere", record.id)
                    return
                result: TurnResult | None = None
                try:
                    async with runner.open_upstream(turn, stream=False) as events:
                        async for event in events:
                            if isinstance(event, TurnResult):
                                result = event
                except (UpstreamError, APIError) as error:  # APIError: an MCP server's 424
                    result = failed_result(error.message)
            final = finished(turn.record, result or failed_result("No answer arrived."))
        except asyncio.CancelledError:
            final = self._stopped(record)
        try:
            await save_finished(runner.store, turn, final, started=True)
        except SaveConflict:
            logger.info("background response %s was finished elsewhere", record.id)

    def _stopped(self, record: StoredResponse) -> StoredResponse:
        """The record of a turn whose task was cancelled: by its client, or by a shutdown."""
        if self.running.cancelled_by_client(record.id):
            return with_status(record, "cancelled")
        result = failed_result("The gateway shut down before the response was complete.")
        return finished(record, result)
