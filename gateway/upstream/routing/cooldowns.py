"""Which deployments and keys failed lately, and which of them rest until when.

Failures are counted in each instance; a cooldown, once started, is shared with every
instance on the store (or Redis) through :class:`session.shared.SharedLimits`: each
instance reads the shared cooldowns at most once every ``REFRESH_SECONDS`` before it
routes a turn, so a cooldown started on one instance is honoured by the others within
that time, and a success that ends one early ends it for all.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from session import SessionError
from session.shared import SharedLimits

from ...routing_settings import CooldownSettings

logger = logging.getLogger(__name__)

REFRESH_SECONDS = 1.0


@dataclass
class _Health:
    fails: deque[float] = field(default_factory=deque)
    strikes: int = 0
    until: float = 0.0
    last_error: str | None = None


class Cooldowns:
    """Recent failures of deployments and keys, by name, and which of them rest until when."""

    def __init__(
        self,
        settings: CooldownSettings,
        shared: SharedLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._shared = shared
        self._clock = clock
        self._wall_clock = wall_clock
        self._health: dict[str, _Health] = {}
        self._refreshed = -REFRESH_SECONDS

    def until(self, name: str) -> float:
        """When ``name``'s cooldown ends (0 when it is not cooling down)."""
        health = self._health.get(name)
        return health.until if health is not None and health.until > self._clock() else 0.0

    def failed(self, name: str, error: str, retry_after: float | None = None) -> bool:
        """Count a failure; True when it starts a cooldown. A ``Retry-After`` rests
        ``name`` until then at once."""
        now, settings = self._clock(), self._settings
        health = self._health.setdefault(name, _Health())
        health.last_error = error
        if retry_after is not None:
            health.until = max(health.until, now + retry_after)
            return True
        health.fails.append(now)
        while health.fails and health.fails[0] < now - settings.window_seconds:
            health.fails.popleft()
        if len(health.fails) < settings.allowed_fails:
            return False
        health.fails.clear()
        health.strikes += 1
        rest = min(settings.seconds * 2 ** (health.strikes - 1), settings.max_seconds)
        health.until = now + rest
        return True

    async def succeeded(self, name: str) -> None:
        """A success ends a cooldown early (the call was its probe) and forgives the rest."""
        health = self._health.pop(name, None)
        if health is not None and health.until > self._clock():
            await self._share(lambda shared: shared.end_cooldowns(name))

    async def reset(self) -> None:
        """End every cooldown, on every instance."""
        self._health.clear()
        await self._share(lambda shared: shared.end_cooldowns())

    async def publish(self, name: str) -> None:
        """Share the cooldown ``name`` just started."""
        health = self._health[name]
        until = self._wall_clock() + health.until - self._clock()
        error = health.last_error or "failed"
        await self._share(lambda shared: shared.start_cooldown(name, until, error))

    async def refresh(self) -> None:
        """Take in the cooldowns other instances started or ended (at most once a second):
        every cooldown is shared as it starts, so what the shared ones lack has ended."""
        now = self._clock()
        if self._shared is None or now - self._refreshed < REFRESH_SECONDS:
            return
        self._refreshed = now
        wall = self._wall_clock()
        try:
            rests = await self._shared.cooldowns(wall)
        except SessionError as error:
            logger.warning("shared cooldowns could not be read: %s", error.message)
            return
        for name in [n for n, h in self._health.items() if h.until > now and n not in rests]:
            del self._health[name]  # ended on another instance: by a success or a reset
        for name, (until, error_text) in rests.items():
            health = self._health.setdefault(name, _Health())
            local = now + until - wall
            if local > health.until:
                health.until, health.last_error = local, error_text

    async def _share(self, write: Callable[[SharedLimits], Awaitable[None]]) -> None:
        if self._shared is None:
            return
        try:
            await write(self._shared)
        except SessionError as error:  # each instance still keeps its own
            logger.warning("a cooldown could not be shared: %s", error.message)

    def report(self) -> dict[str, dict[str, Any]]:
        """Each name with failures: when its cooldown ends (wall clock) and its last error."""
        now, wall = self._clock(), time.time()
        return {
            name: {
                "cooling_down_until": wall + health.until - now if health.until > now else None,
                "recent_failures": len(health.fails),
                "last_error": health.last_error,
            }
            for name, health in self._health.items()
        }
