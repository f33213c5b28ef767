"""Who is calling: API keys to projects, each key's request rate and monthly budget.

Static keys come from ``auth.keys``; managed keys from the session store, looked up by the
SHA-256 of the secret and remembered for ``auth.cache_seconds`` (so a revocation reaches
every instance within that time). A key's ``requests_per_minute`` is a token bucket every
instance shares (:mod:`session.shared`): with several instances it still lets through at
most that many requests a minute.
"""

from __future__ import annotations

import hmac
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from session import Keys, hash_secret
from session.shared import SharedLimits

from ..auth_settings import AuthSettings
from ..errors import APIError
from ..turn.spending import Spending

MAX_CACHED_KEYS = 10_000


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: the project it acts for and its key's limits."""

    project: str
    key_id: str
    requests_per_minute: int | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None


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
        shared: SharedLimits,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        spending: Spending | None = None,
    ) -> None:
        """``spending`` is the one the gateway's turns record to (one of its own if not
        given)."""
        self._store = store
        self._shared = shared
        self._spending = spending or Spending(shared, wall_clock)
        self._clock = clock
        self._wall_clock = wall_clock
        self._ttl = settings.cache_seconds
        self._static = [
            (
                hash_secret(entry.key),
                Caller(
                    entry.project,
                    f"static:{entry.name or n}",
                    entry.requests_per_minute,
                    entry.budget_usd,
                    entry.budget_tokens,
                ),
            )
            for n, entry in enumerate(settings.keys)
        ]
        self._cache: OrderedDict[str, tuple[float, Caller | None]] = OrderedDict()

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
            caller = Caller(
                key.project, key.id, key.requests_per_minute, key.budget_usd, key.budget_tokens
            )
        self._cache[digest] = (now + self._ttl, caller)
        self._cache.move_to_end(digest)
        while len(self._cache) > MAX_CACHED_KEYS:
            self._cache.popitem(last=False)
        return caller

    async def authenticate(self, authorization: str | None) -> Caller:
        token = bearer_token(authorization)
        if token is None:
            raise unauthorized(MISSING_KEY)
        return await self.authenticate_digest(hash_secret(token))

    async def authenticate_digest(self, digest: str) -> Caller:
        """The caller whose key has the SHA-256 ``digest`` (what a console session holds);
        a 401 once the key is gone or revoked."""
        caller = self._static_caller(digest) or await self._managed_caller(digest)
        if caller is None:
            raise unauthorized(INVALID_KEY)
        return caller

    async def admit(self, authorization: str | None) -> Caller:
        """:meth:`authenticate`, then take one request from the key's rate limit."""
        caller = await self.authenticate(authorization)
        await self.acquire(caller)
        return caller

    async def acquire(self, caller: Caller) -> None:
        """Take one more request from the caller's rate limit (a 429 past it, or past its
        monthly budget)."""
        await self._spending.check(caller.key_id, caller.budget_usd, caller.budget_tokens)
        limit = caller.requests_per_minute
        if limit is None:
            return
        now = self._wall_clock()
        wait = await self._shared.take_request(f"key:{caller.key_id}", limit, now)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise APIError(
                429,
                f"Rate limit reached for this API key: {limit} requests per minute. "
                f"Try again in {seconds} s.",
                type="requests",
                code="rate_limit_exceeded",
                headers={"retry-after": str(seconds)},
            )
