"""The console's login sessions: what its cookie holds instead of the API key.

A session is sealed with the gateway's sealing key (:mod:`gateway.sealing`, the same on
every instance of one store), so any instance opens a cookie another one issued, and
nothing needs a table of its own. The sealed text holds a random session id, the SHA-256
of the key that logged in (never the key) and the time the session ends
(``auth.console_session_seconds`` after login). Each use looks the key up again, so a
revoked key's sessions stop within ``auth.cache_seconds``; logging out marks the session id
as ended in the counters every instance shares (the store's, or Redis), so the cookie is
refused everywhere even if a browser kept a copy.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from session.shared import SharedLimits

from ..sealing import Sealer

SESSION_PREFIX = "gwk1."
_BOUND_TO = "console-session"


def _ended_name(session_id: str) -> str:
    return f"console-ended:{session_id}"


@dataclass(frozen=True)
class ConsoleSession:
    """An open session: its id, the digest of the key behind it, and when it ends."""

    session_id: str
    key_digest: str
    expires_at: float


class ConsoleSessions:
    """Issues, opens and ends console sessions."""

    def __init__(
        self,
        sealer: Sealer,
        shared: SharedLimits,
        lifetime_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sealer = sealer
        self._shared = shared
        self.lifetime_seconds = lifetime_seconds
        self._clock = clock

    def issue(self, key_digest: str) -> str:
        """A new session for the key whose SHA-256 is ``key_digest``: the cookie's value."""
        held = {
            "sid": secrets.token_urlsafe(18),
            "key": key_digest,
            "exp": self._clock() + self.lifetime_seconds,
        }
        return self._sealer.seal(_BOUND_TO, json.dumps(held), SESSION_PREFIX)

    def _unsealed(self, cookie: str) -> ConsoleSession | None:
        text = self._sealer.open(_BOUND_TO, cookie, SESSION_PREFIX)
        if text is None:
            return None
        held = json.loads(text)
        session = ConsoleSession(str(held["sid"]), str(held["key"]), float(held["exp"]))
        return session if session.expires_at > self._clock() else None

    async def open(self, cookie: str) -> ConsoleSession | None:
        """The session a cookie holds; ``None`` if forged, expired or logged out."""
        session = self._unsealed(cookie)
        if session is None or await self._shared.spent(_ended_name(session.session_id)):
            return None
        return session

    async def end(self, cookie: str) -> None:
        """Log the cookie's session out on every instance (nothing for a dead cookie)."""
        session = self._unsealed(cookie)
        if session is not None:
            await self._shared.add_spend(_ended_name(session.session_id), 1.0)
