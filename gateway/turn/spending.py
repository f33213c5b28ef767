"""What each API key spends a month, and the budgets that stop it.

A priced turn (``models.NAME.pricing``, or ``genai-prices``' published prices) adds its
cost to its key's counter for the calendar month (UTC) it was created in; a key with
``budget_usd`` is refused, before anything is sent upstream, once its month's counter
reaches the budget. A key with ``budget_tokens`` has a second counter, of the tokens
(input and output) its turns used, priced or not. The counters live where the instances
share their limits (the store, or Redis), so a budget holds across instances; turns
already running when the budget is reached still finish, so a month may end above the
budget by what those turns cost.
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


def tokens_name(key_id: str, at: float) -> str:
    """The counter of the tokens ``key_id`` used in the month of ``at``."""
    return f"tokens:{key_id}:{month_of(at)}"


def _refused(budget: str, month: str, used: str) -> APIError:
    return APIError(
        429,
        f"This API key has used its budget of {budget} for {month} ({used}); "
        "it renews on the first of next month (UTC).",
        type="insufficient_quota",
        code="insufficient_quota",
    )


class Spending:
    """Counts what keys spend and refuses a key past its monthly budget.

    One instance serves the gateway's keys and its turns: the keys that were checked
    against a token budget are the ones whose turns' tokens are counted (counting every
    key's would cost every turn a write).
    """

    def __init__(self, shared: SharedLimits, clock: Callable[[], float] = time.time) -> None:
        self._shared = shared
        self._clock = clock
        self._counting_tokens: set[str] = set()

    async def check(
        self, key_id: str, budget_usd: float | None, budget_tokens: int | None = None
    ) -> None:
        """Raise a 429 ``insufficient_quota`` when the key used a budget this month."""
        now = self._clock()
        if budget_usd is not None:
            spent = await self._shared.spent(spend_name(key_id, now))
            if spent >= budget_usd:
                raise _refused(f"${budget_usd:.2f}", month_of(now), f"spent ${spent:.2f}")
        if budget_tokens is not None:
            self._counting_tokens.add(key_id)
            used = await self._shared.spent(tokens_name(key_id, now))
            if used >= budget_tokens:
                raise _refused(f"{budget_tokens:,} tokens", month_of(now), f"used {used:,.0f}")

    async def this_month(self, key_id: str) -> tuple[str, float, float]:
        """The month (UTC, ``YYYY-MM``), and what ``key_id`` spent and the tokens it used in
        it so far (tokens are counted for keys with a token budget only)."""
        now = self._clock()
        spent = await self._shared.spent(spend_name(key_id, now))
        return month_of(now), spent, await self._shared.spent(tokens_name(key_id, now))

    async def add_cost(self, key_id: str, at: float, cost: float) -> None:
        """Add the cost of a call no turn holds (embeddings) to ``key_id``'s month."""
        await self._shared.add_spend(spend_name(key_id, at), cost)

    async def record(self, record: StoredResponse) -> None:
        """Add a finished turn's cost (and tokens, for a key with a token budget) to its
        key's month."""
        key_id = record.metadata.get("key_id")
        if not isinstance(key_id, str):
            return
        cost = record.metadata.get("cost_usd")
        usage = record.response.usage or {}
        tokens = sum(
            count
            for count in (usage.get("input_tokens"), usage.get("output_tokens"))
            if isinstance(count, int)
        )
        try:
            if cost:
                await self._shared.add_spend(spend_name(key_id, record.created_at), float(cost))
            if tokens and key_id in self._counting_tokens:
                await self._shared.add_spend(tokens_name(key_id, record.created_at), tokens)
        except SessionError as error:  # the answer is not lost for its bill
            logger.warning("the cost of %s was not counted: %s", record.id, error.message)
