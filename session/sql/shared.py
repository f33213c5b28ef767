"""The limits instances share (:mod:`session.shared`), in tables of the store itself."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, TypeVar

from ..shared import refilled, taken
from .dialect import Dialect
from .statement import Returning, rows, run

T = TypeVar("T")


def take_request(dialect: Dialect, name: str, per_minute: int, now: float) -> Returning[float]:
    yield run(
        "INSERT INTO gateway_buckets (name, tokens, updated_at) VALUES (:name, :tokens, :now)"
        " ON CONFLICT DO NOTHING",
        name=name,
        tokens=float(per_minute),
        now=now,
    )
    found = yield rows(
        f"SELECT tokens, updated_at FROM gateway_buckets WHERE name = :name{dialect.for_update}",
        name=name,
    )
    tokens, at = found[0]
    tokens, wait = taken(refilled(tokens, at, per_minute, now), per_minute)
    yield run(
        "UPDATE gateway_buckets SET tokens = :tokens, updated_at = :at WHERE name = :name",
        name=name,
        tokens=tokens,
        at=max(at, now),  # a clock behind another instance's gains nothing
    )
    return wait


def add_spend(name: str, amount: float) -> Returning[None]:
    yield run(
        "INSERT INTO gateway_counters (name, value) VALUES (:name, :amount)"
        " ON CONFLICT (name) DO UPDATE SET value = gateway_counters.value + excluded.value",
        name=name,
        amount=amount,
    )


def spent(name: str) -> Returning[float]:
    found = yield rows("SELECT value FROM gateway_counters WHERE name = :name", name=name)
    return float(found[0][0]) if found else 0.0


def start_cooldown(name: str, until: float, error: str) -> Returning[None]:
    yield run(
        "INSERT INTO gateway_cooldowns (name, ends_at, error) VALUES (:name, :until, :error)"
        " ON CONFLICT (name) DO UPDATE SET ends_at = excluded.ends_at, error = excluded.error"
        " WHERE gateway_cooldowns.ends_at < excluded.ends_at",
        name=name,
        until=until,
        error=error,
    )


def cooldowns(now: float) -> Returning[dict[str, tuple[float, str]]]:
    found = yield rows(
        "SELECT name, ends_at, error FROM gateway_cooldowns WHERE ends_at > :now", now=now
    )
    return {name: (float(until), error) for name, until, error in found}


def end_cooldowns(name: str | None) -> Returning[None]:
    yield run(
        "DELETE FROM gateway_cooldowns WHERE CAST(:name AS TEXT) IS NULL OR name = :name",
        name=name,
    )


def affinity(name: str, now: float) -> Returning[str | None]:
    found = yield rows(
        "SELECT target FROM gateway_affinity WHERE name = :name AND expires_at > :now",
        name=name,
        now=now,
    )
    return str(found[0][0]) if found else None


def keep_affinity(name: str, target: str, until: float, now: float) -> Returning[None]:
    yield run("DELETE FROM gateway_affinity WHERE expires_at <= :now", now=now)
    yield run(
        "INSERT INTO gateway_affinity (name, target, expires_at) VALUES (:name, :target, :until)"
        " ON CONFLICT (name) DO UPDATE SET target = excluded.target,"
        " expires_at = excluded.expires_at",
        name=name,
        target=target,
        until=until,
    )


class SQLSharedLimits(ABC):
    """:class:`session.shared.SharedLimits` on a SQL store's transactions."""

    dialect: ClassVar[Dialect]

    @abstractmethod
    async def _read_now(self, make: Callable[[], Returning[T]]) -> T: ...

    @abstractmethod
    async def _write(self, make: Callable[[], Returning[T]], *, durable: bool = True) -> T: ...

    # None of these needs a sync of its own: a power loss may only forget a few requests
    # counted, or a cooldown.

    async def take_request(self, name: str, per_minute: int, now: float) -> float:
        return await self._write(
            lambda: take_request(self.dialect, name, per_minute, now), durable=False
        )

    async def add_spend(self, name: str, amount: float) -> None:
        await self._write(lambda: add_spend(name, amount), durable=False)

    async def spent(self, name: str) -> float:
        return await self._read_now(lambda: spent(name))

    async def start_cooldown(self, name: str, until: float, error: str) -> None:
        await self._write(lambda: start_cooldown(name, until, error), durable=False)

    async def cooldowns(self, now: float) -> dict[str, tuple[float, str]]:
        return await self._read_now(lambda: cooldowns(now))

    async def end_cooldowns(self, name: str | None = None) -> None:
        await self._write(lambda: end_cooldowns(name), durable=False)

    async def affinity(self, name: str, now: float) -> str | None:
        return await self._read_now(lambda: affinity(name, now))

    async def keep_affinity(self, name: str, target: str, until: float, now: float) -> None:
        await self._write(lambda: keep_affinity(name, target, until, now), durable=False)
