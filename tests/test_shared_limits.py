"""The limits instances share: one contract over the memory, SQLite, PostgreSQL and Redis
backends, and two stores on one database seeing each other's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from session import MemoryStore, SQLiteStore
from session.redis_shared import RedisSharedLimits
from session.shared import SharedLimits

pytestmark = [pytest.mark.contract, pytest.mark.anyio]

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
async def limits(request: Any, tmp_path: Path) -> AsyncIterator[SharedLimits]:
    if request.param != "redis":
        store = make_store(request.param, tmp_path, request)
        yield store
        await store.close()
        return
    redis = RedisSharedLimits(REDIS_URL, prefix=f"test:{uuid.uuid4().hex}:")
    try:
        await redis.ping()
    except Exception as error:  # no Redis: say why
        await redis.close()
        pytest.skip(f"Redis is not reachable at {REDIS_URL}: {error}")
    yield redis
    await redis.close()


def make_store(backend: str, folder: Path, request: Any) -> Any:
    if backend == "memory":
        return MemoryStore()
    if backend == "sqlite":
        return SQLiteStore(folder / "sessions.db")
    from session.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("postgres_dsn"))


async def test_a_bucket_lets_its_rate_through_and_says_how_long_to_wait(
    limits: SharedLimits,
) -> None:
    now = 1_000_000.0
    assert [await limits.take_request("key:a", 3, now) for _ in range(3)] == [0.0] * 3
    wait = await limits.take_request("key:a", 3, now)
    assert wait == pytest.approx(20.0)  # one request in 60 / 3 seconds
    assert await limits.take_request("key:b", 3, now) == 0.0  # each name its own bucket
    assert await limits.take_request("key:a", 3, now + 10) == pytest.approx(10.0)
    assert await limits.take_request("key:a", 3, now + 20) == 0.0
    # A clock behind the last request's gains nothing.
    assert await limits.take_request("key:a", 3, now - 100) > 0


async def test_spend_adds_up(limits: SharedLimits) -> None:
    assert await limits.spent("spend:k:2026-12") == 0.0
    await limits.add_spend("spend:k:2026-12", 0.25)
    await limits.add_spend("spend:k:2026-12", 0.5)
    assert await limits.spent("spend:k:2026-12") == pytest.approx(0.75)
    assert await limits.spent("spend:k:2027-01") == 0.0


async def test_cooldowns_end_when_due_or_when_ended(limits: SharedLimits) -> None:
    await limits.start_cooldown("east/m", 200.0, "http_500")
    await limits.start_cooldown("east/m", 150.0, "http_502")  # never shortened
    await limits.start_cooldown("keyed#0", 300.0, "http_429")
    assert await limits.cooldowns(100.0) == {
        "east/m": (200.0, "http_500"),
        "keyed#0": (300.0, "http_429"),
    }
    assert await limits.cooldowns(250.0) == {"keyed#0": (300.0, "http_429")}
    await limits.start_cooldown("east/m", 400.0, "http_503")
    await limits.end_cooldowns("keyed#0")
    assert await limits.cooldowns(250.0) == {"east/m": (400.0, "http_503")}
    await limits.end_cooldowns()
    assert await limits.cooldowns(0.0) == {}


async def test_an_affinity_is_kept_until_it_expires(limits: SharedLimits) -> None:
    assert await limits.affinity("prompt_cache_key:a", 100.0) is None
    await limits.keep_affinity("prompt_cache_key:a", "east/m east#0", 200.0, 100.0)
    await limits.keep_affinity("conversation:b", "west/m west#1", 150.0, 100.0)
    assert await limits.affinity("prompt_cache_key:a", 120.0) == "east/m east#0"
    assert await limits.affinity("conversation:b", 160.0) is None  # expired
    # A move replaces it; a later write drops what expired meanwhile.
    await limits.keep_affinity("prompt_cache_key:a", "east/m east#1", 300.0, 160.0)
    assert await limits.affinity("prompt_cache_key:a", 170.0) == "east/m east#1"
    assert await limits.affinity("conversation:b", 100.0) in (None, "west/m west#1")


async def test_two_stores_on_one_file_share_their_limits(tmp_path: Path) -> None:
    first, second = SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")
    try:
        assert await first.take_request("key:a", 1, 50.0) == 0.0
        assert await second.take_request("key:a", 1, 50.0) == pytest.approx(60.0)
        await first.add_spend("spend:a", 1.5)
        assert await second.spent("spend:a") == 1.5
        await second.start_cooldown("east/m", 90.0, "http_500")
        assert await first.cooldowns(60.0) == {"east/m": (90.0, "http_500")}
        await second.keep_affinity("conversation:c", "east/m east#0", 90.0, 60.0)
        assert await first.affinity("conversation:c", 60.0) == "east/m east#0"
    finally:
        await first.close()
        await second.close()
