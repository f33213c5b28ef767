"""Background upkeep of the store while the gateway runs.

Each loop ends when its ``stop`` event is set, between two operations: a shutdown does not
cut a query in flight (PostgreSQL's driver would then cancel it on the server and log it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from session import SessionError, Upkeep

logger = logging.getLogger(__name__)

STALE_ERROR = {
    "code": "server_error",
    "message": "The gateway instance running this response stopped before it finished.",
}


async def paused(stop: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds`` or until ``stop`` is set; whether to go on."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return not stop.is_set()


async def fail_stale_turns(
    store: Upkeep,
    stale_after: float,
    events_kept: float,
    interval: float,
    stop: asyncio.Event,
) -> None:
    """Every ``interval`` seconds (and at once), fail turns unfinished for ``stale_after``,
    and drop the stream events of finished turns kept longer than ``events_kept``.

    A turn older than every deadline cannot still be running anywhere: its instance
    crashed. Several instances may sweep at once; each turn is marked once.
    """
    while True:
        try:
            count = await store.fail_stale(time.time() - stale_after, STALE_ERROR)
            if count:
                logger.warning("marked %d unfinished response(s) failed", count)
            await store.prune_events(time.time() - events_kept)
        except SessionError as error:
            logger.warning("sweep of unfinished responses skipped: %s", error.message)
        if not await paused(stop, interval):
            return


async def keep_alive(
    store: Upkeep, instance_id: str, every: float, dead_after: float, stop: asyncio.Event
) -> None:
    """Every ``every`` seconds (and at once), write this instance's heartbeat, then fail
    the unfinished turns of instances whose heartbeat is older than ``dead_after``.

    An instance that died mid-turn is found within ``dead_after + every`` seconds,
    long before its turns pass every deadline.
    """
    while True:
        try:
            await store.beat(instance_id, time.time())
            count = await store.fail_orphaned(time.time() - dead_after, STALE_ERROR)
            if count:
                logger.warning("marked %d response(s) of a stopped instance failed", count)
        except SessionError as error:
            logger.warning("heartbeat skipped: %s", error.message)
        if not await paused(stop, every):
            return


PRUNE_BATCH = 200
PRUNE_PAUSE_SECONDS = 0.05


async def prune_expired(
    store: Upkeep, retention: float, interval: float, stop: asyncio.Event
) -> None:
    """Every ``interval`` seconds (and at once), delete what is older than ``retention``.

    Small batches with a pause between them: turns keep the store's write lock for no
    more than one batch. Instances pruning together each delete a record at most once.
    """
    while True:
        before = time.time() - retention
        responses = conversations = 0
        try:
            while pruned := await store.prune(before, PRUNE_BATCH):
                responses += pruned.responses
                conversations += pruned.conversations
                if not await paused(stop, PRUNE_PAUSE_SECONDS):
                    break
        except SessionError as error:
            logger.warning("retention sweep stopped early: %s", error.message)
        if responses or conversations:
            logger.info(
                "retention: deleted %d response(s) and %d conversation(s)",
                responses,
                conversations,
            )
        if not await paused(stop, interval):
            return
