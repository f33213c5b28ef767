"""Which deployments and keys failed lately, and which of them rest until when."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..routing_settings import CooldownSettings


@dataclass
class _Health:
    fails: deque[float] = field(default_factory=deque)
    strikes: int = 0
    until: float = 0.0
    last_error: str | None = None


class Cooldowns:
    """Recent failures of deployments and keys, by name, and which of them rest until when."""

    def __init__(
        self, settings: CooldownSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._health: dict[str, _Health] = {}

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

    def succeeded(self, name: str) -> None:
        """A success ends a cooldown early (the call was its probe) and forgives the rest."""
        self._health.pop(name, None)

    def reset(self) -> None:
        self._health.clear()

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
