"""Limits every gateway instance on one store shares: request rates, spend, cooldowns,
and where a prompt cache key's or a conversation's turns go (routing affinity).

A request rate is a token bucket per name (``per_minute`` requests a minute, bursts up to
that many); spend is a counter per name; a cooldown is a name resting until a wall-clock
time, with the error that started it. The SQL stores keep them in their own tables, so
instances on one PostgreSQL database (or one SQLite file) share them; Redis keeps them
when ``routing.redis_url`` is set (:mod:`session.redis_shared`); the memory store keeps
them in the process, which is all it has.

Times are wall-clock seconds (``time.time()``): instances on several machines must keep
their clocks in step (NTP) for a shared bucket to refill at its rate.
"""

from __future__ import annotations

from typing import Protocol


class SharedLimits(Protocol):
    """Request rates, spend and cooldowns, shared by every instance on one store."""

    async def take_request(self, name: str, per_minute: int, now: float) -> float:
        """Take one request from ``name``'s bucket: 0.0 when taken, else the seconds until
        one is free (and nothing is taken)."""
        ...

    async def add_spend(self, name: str, amount: float) -> None:
        """Add ``amount`` to the counter ``name``."""
        ...

    async def spent(self, name: str) -> float:
        """The counter ``name`` (0.0 if nothing was added)."""
        ...

    async def start_cooldown(self, name: str, until: float, error: str) -> None:
        """Rest ``name`` until ``until`` (never shortening a longer rest)."""
        ...

    async def cooldowns(self, now: float) -> dict[str, tuple[float, str]]:
        """Every name resting after ``now``: its end and the error that started it."""
        ...

    async def end_cooldowns(self, name: str | None = None) -> None:
        """End ``name``'s rest, or every rest."""
        ...

    async def affinity(self, name: str, now: float) -> str | None:
        """The target kept under ``name`` (where its turns went), unless it expired."""
        ...

    async def keep_affinity(self, name: str, target: str, until: float, now: float) -> None:
        """Keep ``target`` under ``name`` until ``until``; entries expired by ``now`` go."""
        ...


def refilled(tokens: float, at: float, per_minute: int, now: float) -> float:
    """A bucket's tokens at ``now``, refilled since ``at`` (never past its size)."""
    return min(float(per_minute), tokens + max(0.0, now - at) * per_minute / 60.0)


def taken(tokens: float, per_minute: int) -> tuple[float, float]:
    """The bucket after one request is asked of it, and the wait (0.0 if it was taken)."""
    if tokens >= 1.0:
        return tokens - 1.0, 0.0
    return tokens, (1.0 - tokens) * 60.0 / per_minute


class InProcessLimits:
    """:class:`SharedLimits` within one process (the memory store's)."""

    def __init__(self) -> None:
        self._buckets: dict[str, tuple[float, float]] = {}
        self._counters: dict[str, float] = {}
        self._rests: dict[str, tuple[float, str]] = {}
        self._affinity: dict[str, tuple[str, float]] = {}

    async def take_request(self, name: str, per_minute: int, now: float) -> float:
        tokens, at = self._buckets.get(name, (float(per_minute), now))
        tokens, wait = taken(refilled(tokens, at, per_minute, now), per_minute)
        self._buckets[name] = (tokens, now)
        return wait

    async def add_spend(self, name: str, amount: float) -> None:
        self._counters[name] = self._counters.get(name, 0.0) + amount

    async def spent(self, name: str) -> float:
        return self._counters.get(name, 0.0)

    async def start_cooldown(self, name: str, until: float, error: str) -> None:
        current = self._rests.get(name)
        if current is None or current[0] < until:
            self._rests[name] = (until, error)

    async def cooldowns(self, now: float) -> dict[str, tuple[float, str]]:
        return {name: rest for name, rest in self._rests.items() if rest[0] > now}

    async def end_cooldowns(self, name: str | None = None) -> None:
        if name is None:
            self._rests.clear()
        else:
            self._rests.pop(name, None)

    async def affinity(self, name: str, now: float) -> str | None:
        target, until = self._affinity.get(name, (None, 0.0))
        return target if until > now else None

    async def keep_affinity(self, name: str, target: str, until: float, now: float) -> None:
        for stale in [n for n, (_, end) in self._affinity.items() if end <= now]:
            del self._affinity[stale]
        self._affinity[name] = (target, until)
