"""The limits instances share (:mod:`session.shared`), kept in Redis.

Used when ``routing.redis_url`` is set: every check is one round trip to Redis (a Lua
script for a request bucket, so that taking a request is atomic across instances), and
nothing is written to the session store for it. Keys start with ``gateway:``; a bucket
expires once it would be full again, a spend counter after 40 days, an affinity when its
``routing.affinity_idle_seconds`` are over.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .errors import StoreUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

PREFIX = "gateway:"
SPEND_TTL_SECONDS = 40 * 24 * 3600

_TAKE = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local size = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local tokens = tonumber(state[1]) or size
local at = tonumber(state[2]) or now
tokens = math.min(size, tokens + math.max(0, now - at) * size / 60)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) * 60 / size end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(math.max(at, now)))
redis.call('EXPIRE', KEYS[1], 61)
return tostring(wait)
"""

_REST = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  if tonumber(cjson.decode(current)[1]) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""


class RedisSharedLimits:
    """:class:`session.shared.SharedLimits` in Redis (``pip install -e '.[redis]'``)."""

    def __init__(self, url: str, prefix: str = PREFIX) -> None:
        try:
            from redis.asyncio import Redis
        except ImportError:  # pragma: no cover - the extra is installed in the suite
            raise RuntimeError(
                "routing.redis_url needs the Redis client: pip install -e '.[redis]'"
            ) from None
        self._redis: Redis = Redis.from_url(url, decode_responses=True)
        self._prefix = prefix
        self._cooldowns = prefix + "cooldowns"
        self._take: Any = self._redis.register_script(_TAKE)
        self._rest: Any = self._redis.register_script(_REST)

    @asynccontextmanager
    async def _calling(self) -> AsyncIterator[None]:
        """Redis's failures as the store's: a 503 ``store_unavailable`` to the client."""
        from redis.exceptions import RedisError

        try:
            yield
        except RedisError as error:
            raise StoreUnavailable(
                f"Redis at routing.redis_url cannot be used ({error})."
            ) from None

    async def take_request(self, name: str, per_minute: int, now: float) -> float:
        async with self._calling():
            bucket = self._prefix + "bucket:" + name
            return float(await self._take(keys=[bucket], args=[per_minute, now]))

    async def add_spend(self, name: str, amount: float) -> None:
        key = self._prefix + "spend:" + name
        async with self._calling(), self._redis.pipeline(transaction=True) as pipe:
            pipe.incrbyfloat(key, amount)
            pipe.expire(key, SPEND_TTL_SECONDS)
            await pipe.execute()

    async def spent(self, name: str) -> float:
        async with self._calling():
            value = await self._redis.get(self._prefix + "spend:" + name)
        return float(value) if value is not None else 0.0

    async def start_cooldown(self, name: str, until: float, error: str) -> None:
        async with self._calling():
            await self._rest(keys=[self._cooldowns], args=[name, until, json.dumps([until, error])])

    async def cooldowns(self, now: float) -> dict[str, tuple[float, str]]:
        async with self._calling():
            found = await self._redis.hgetall(self._cooldowns)
        rests = {str(name): json.loads(value) for name, value in found.items()}
        return {
            name: (float(until), str(error))
            for name, (until, error) in rests.items()
            if float(until) > now
        }

    async def end_cooldowns(self, name: str | None = None) -> None:
        async with self._calling():
            if name is None:
                await self._redis.delete(self._cooldowns)
            else:
                await self._redis.hdel(self._cooldowns, name)

    async def affinity(self, name: str, now: float) -> str | None:
        async with self._calling():
            found = await self._redis.get(self._prefix + "affinity:" + name)
        if found is None:
            return None
        target, until = json.loads(found)
        return str(target) if float(until) > now else None

    async def keep_affinity(self, name: str, target: str, until: float, now: float) -> None:
        seconds = max(1, math.ceil(until - now))  # Redis forgets it by then
        async with self._calling():
            value = json.dumps([target, until])
            await self._redis.set(self._prefix + "affinity:" + name, value, ex=seconds)

    async def ping(self) -> None:
        async with self._calling():
            await self._redis.ping()

    async def close(self) -> None:
        await self._redis.aclose()
