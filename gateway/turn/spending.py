"""What each API key spends a month, and the budget that stops it.

A priced turn (``models.NAME.pricing``) adds its cost to its key's counter for the
calendar month (UTC) it was created in; a key with ``budget_usd`` is refused, before
anything is sent upstream, once its month's counter reaches the budget. The counters
live where the instances share their limits (the store, or Redis), so a budget holds
across instances; turns already running when the budget is reached still finish, so a
month may end above the budget by what those turns cost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from session import SessionError, StoredResponse
from session.shared import SharedLimits

from ..errors import APIError

logger = logging.getLogger(__name__)


def month_of(at: float) -> str:
    return time.strftime("%Y-%m", time.gmtime(at))


def spend_name(key_id: str, at: float) -> str:
    """The counter of what ``key_id`` spent in the month of ``at``."""
    return f"spend:{key_id}:{month_of(at)}"


class Spending:
    """Counts what keys spend and refuses a key past its monthly budget."""

    def __init__(self, shared: SharedLimits, clock: Callable[[], float] = time.time) -> None:
        self._shared = shared
        self._clock = clock

    async def check(self, key_id: str, budget_usd: float | None) -> None:
        """Raise a 429 ``insufficient_quota`` when the key spent its budget this month."""
        if budget_usd is None:
            return
        now = self._clock()
        spent = await self._shared.spent(spend_name(key_id, now))
        if spent >= budget_usd:
            raise APIError(
                429,
                f"This API key has used its budget of ${budget_usd:.2f} for {month_of(now)} "
                f"(spent ${spent:.2f}); it renews on the first of next month (UTC).",
                type="insufficient_quota",
                code="insufficient_quota",
            )

    async def record(self, record: StoredResponse) -> None:
        """Add a finished turn's cost to its key's month (a turn without either is free)."""
        cost, key_id = record.metadata.get("cost_usd"), record.metadata.get("key_id")
        if not cost or not isinstance(key_id, str):
            return
        try:
            await self._shared.add_spend(spend_name(key_id, record.created_at), float(cost))
        except SessionError as error:  # the answer is not lost for its bill
            logger.warning("the cost of %s was not counted: %s", record.id, error.message)
