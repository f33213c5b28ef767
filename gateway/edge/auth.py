"""Who is calling: API keys to projects, and each key's request rate.

Static keys come from ``auth.keys``; managed keys from the session store, looked up by the
SHA-256 of the secret and remembered for ``auth.cache_seconds`` (so a revocation reaches
every instance within that time).
"""

from __future__ import annotations

import hmac
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from session import Keys, hash_secret

from ..auth_settings import AuthSettings
from ..errors import APIError

MAX_CACHED_KEYS = 10_000


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: the project it acts for and its key's limits."""

    project: str
    key_id: str
    requests_per_minute: int | None = None


def unauthorized(message: str) -> APIError:
    return APIError(
        401,
        message,
        code="invalid_api_key",
        headers={"www-authenticate": 'Bearer realm="gateway"'},
    )


MISSING_KEY = (
    "You didn't provide an API key. Send it in an Authorization header using Bearer auth "
    "(Authorization: Bearer YOUR_KEY)."
)
INVALID_KEY = "Incorrect API key provided, or the key was revoked."


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if that is what it holds."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def is_admin(settings: AuthSettings, authorization: str | None) -> bool:
    """Whether the header carries ``auth.admin_key``."""
    token = bearer_token(authorization)
    if settings.admin_key is None or token is None:
        return False
    return hmac.compare_digest(hash_secret(token), hash_secret(settings.admin_key))


class Authenticator:
    """Maps a bearer token to a :class:`Caller` or raises a 401 :class:`APIError`."""

    def __init__(
        self,
        settings: AuthSettings,
        store: Keys,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._clock = clock
        self._ttl = settings.cache_seconds
        self._static = [
            (hash_secret(entry.key), Caller(entry.project, f"static:{entry.name or n}", rpm))
            for n, entry in enumerate(settings.keys)
            for rpm in [entry.requests_per_minute]
        ]
        self._cache: OrderedDict[str, tuple[float, Caller | None]] = OrderedDict()
        self._limiter = RateLimiter(clock)

    def _static_caller(self, digest: str) -> Caller | None:
        found = None
        for known, caller in self._static:  # every entry compared, in constant time
            if hmac.compare_digest(known, digest):
                found = caller
        return found

    async def _managed_caller(self, digest: str) -> Caller | None:
        now = self._clock()
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        key = await self._store.find_key(digest)
        caller = None
        if (
            key is not None
            and key.revoked_at is None
            and hmac.compare_digest(key.secret_hash, digest)
        ):
            caller = Caller(key.project, key.id, key.requests_per_minute)
        self._cache[digest] = (now + self._ttl, caller)
        self._cache.move_to_end(digest)
        while len(self._cache) > MAX_CACHED_KEYS:
            self._cache.popitem(last=False)
        return caller

    async def authenticate(self, authorization: str | None) -> Caller:
        token = bearer_token(authorization)
        if token is None:
            raise unauthorized(MISSING_KEY)
        digest = hash_secret(token)
        caller = self._static_caller(digest) or await self._managed_caller(digest)
        if caller is None:
            raise unauthorized(INVALID_KEY)
        return caller

    async def admit(self, authorization: str | None) -> Caller:
        """:meth:`authenticate`, then take one request from the key's rate limit."""
        caller = await self.authenticate(authorization)
        self._limiter.acquire(caller)
        return caller

    def acquire(self, caller: Caller) -> None:
        """Take one more request from the caller's rate limit (a 429 past it)."""
        self._limiter.acquire(caller)


class RateLimiter:
    """A token bucket per key: ``requests_per_minute`` a minute, bursts up to that many."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key id -> (tokens, at)

    def acquire(self, caller: Caller) -> None:
        """Take one request from the caller's bucket or raise a 429 :class:`APIError`."""
        limit = caller.requests_per_minute
        if limit is None:
            return
        now = self._clock()
        tokens, at = self._buckets.get(caller.key_id, (float(limit), now))
        tokens = min(float(limit), tokens + (now - at) * limit / 60.0)
        if tokens < 1.0:
            self._buckets[caller.key_id] = (tokens, now)
            wait = math.ceil((1.0 - tokens) * 60.0 / limit)
            raise APIError(
                429,
                f"Rate limit reached for this API key: {limit} requests per minute. "
                f"Try again in {wait} s.",
                type="requests",
                code="rate_limit_exceeded",
                headers={"retry-after": str(wait)},
            )
        self._buckets[caller.key_id] = (tokens - 1.0, now)
