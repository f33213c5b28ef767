"""Background responses: ``background: true`` returns ``queued`` at once; a task runs the turn.

The task opens the turn (conversation lock, context) and stores it ``queued``; until then
any failure is the create request's own HTTP error. It waits for a background slot of
its provider (see :mod:`gateway.background_slots`), then stores ``in_progress``, calls
the upstream and stores how it ended. ``POST /v1/responses/{id}/cancel`` cancels the task
(the turn is stored ``cancelled``); a shutdown past its grace period cancels the rest
(stored ``failed``). A turn whose instance died is failed once that instance's
heartbeat goes stale (see :func:`gateway.maintenance.keep_alive`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from session import SaveConflict, StoredResponse

from ..upstream import TurnResult, UpstreamError
from ..upstream.results import failed_result
from .background_slots import FairSlots
from .cancellable import CancellableTurns

if TYPE_CHECKING:
    from ..api.request_body import CreateResponseBody
    from .service import ResponsesService, Turn

logger = logging.getLogger(__name__)


class BackgroundTurns:
    """The background turns this instance runs, by response id."""

    def __init__(self) -> None:
        self.running = CancellableTurns()
        self._shares: dict[str, FairSlots] = {}  # by provider, made on first use

    async def start(
        self, service: ResponsesService, body: CreateResponseBody, project: str
    ) -> StoredResponse:
        """Open the turn and store it ``queued``; return that record once it is stored."""
        ready: asyncio.Future[StoredResponse] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._run(service, body, project, ready))
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
        service: ResponsesService,
        body: CreateResponseBody,
        project: str,
        ready: asyncio.Future[StoredResponse],
    ) -> None:
        try:
            async with service.turn(body, project) as turn:
                turn.record = turn.record.model_copy(update={"status": "queued"})
                await service.save_started(turn)
                ready.set_result(turn.record)
                await self._complete(service, turn)
        except Exception as error:
            if not ready.done():
                ready.set_exception(error)  # the create request reports it
                return
            logger.exception("background turn (model %s) failed", body.model)
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise

    def _slot(self, service: ResponsesService, turn: Turn) -> AbstractAsyncContextManager[None]:
        """A slot of the turn's provider for the turn's project (none needed for ``echo``)."""
        if service.client(turn.provider) is None:
            return contextlib.nullcontext()
        slots = self._shares.get(turn.provider)
        if slots is None:
            shares = service.config.providers[turn.provider].background_shares()
            slots = self._shares[turn.provider] = FairSlots(*shares)
        return slots.slot(turn.record.project)

    async def _complete(self, service: ResponsesService, turn: Turn) -> None:
        record = turn.record
        try:
            async with self._slot(service, turn):
                turn.record = record = record.model_copy(update={"status": "in_progress"})
                try:
                    await service.store.save(record, overwrite=True)
                except SaveConflict:
                    logger.info("background response %s was finished elsewhere", record.id)
                    return
                result: TurnResult | None = None
                try:
                    async with service.open_upstream(turn, stream=False) as events:
                        async for event in events:
                            if isinstance(event, TurnResult):
                                result = event
                except UpstreamError as error:
                    result = failed_result(error.message)
            final = service.finished(turn.record, result or failed_result("No answer arrived."))
        except asyncio.CancelledError:
            final = self._stopped(service, record)
        try:
            await service.save_finished(turn, final, started=True)
        except SaveConflict:
            logger.info("background response %s was finished elsewhere", record.id)

    def _stopped(self, service: ResponsesService, record: StoredResponse) -> StoredResponse:
        """The record of a turn whose task was cancelled: by its client, or by a shutdown."""
        if self.running.cancelled_by_client(record.id):
            return record.model_copy(update={"status": "cancelled", "completed_at": time.time()})
        result = failed_result("The gateway shut down before the response was complete.")
        return service.finished(record, result)
