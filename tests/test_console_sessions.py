"""Console sessions on their own: sealed, expiring on their clock, ended on logout for
every instance that shares the counters, and never holding the key."""

from __future__ import annotations

import pytest

from gateway.edge.console_sessions import ConsoleSessions
from gateway.sealing import Sealer
from session import hash_secret
from session.shared import InProcessLimits

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

KEY = "sk-project-default-0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_session_opens_until_it_expires() -> None:
    clock = Clock()
    sessions = ConsoleSessions(Sealer("s" * 32), InProcessLimits(), 3600.0, clock)
    cookie = sessions.issue(hash_secret(KEY))
    assert KEY not in cookie and hash_secret(KEY) not in cookie
    opened = await sessions.open(cookie)
    assert opened is not None and opened.key_digest == hash_secret(KEY)
    assert opened.expires_at == clock.now + 3600.0
    clock.now += 3599.0
    assert await sessions.open(cookie) is not None
    clock.now += 1.0
    assert await sessions.open(cookie) is None


async def test_logging_out_ends_the_session_on_every_instance_sharing_the_counters() -> None:
    shared = InProcessLimits()
    one = ConsoleSessions(Sealer("s" * 32), shared, 3600.0)
    other = ConsoleSessions(Sealer("s" * 32), shared, 3600.0)
    cookie, kept = one.issue("digest-a"), one.issue("digest-a")
    assert cookie != kept and await other.open(cookie) is not None
    await other.end(cookie)
    assert await one.open(cookie) is None and await other.open(cookie) is None
    assert await one.open(kept) is not None  # only the session logged out ends
    await one.end("not a session")  # a dead cookie ends nothing, and raises nothing


async def test_a_forged_or_foreign_cookie_opens_nothing() -> None:
    sessions = ConsoleSessions(Sealer("s" * 32), InProcessLimits(), 3600.0)
    cookie = sessions.issue("digest-a")
    elsewhere = ConsoleSessions(Sealer("t" * 32), InProcessLimits(), 3600.0)
    assert await elsewhere.open(cookie) is None  # another gateway's sealing key
    assert await sessions.open(cookie[:-2] + ("AA" if cookie[-2:] != "AA" else "BB")) is None
    assert await sessions.open(KEY) is None
    sealed_elsewise = Sealer("s" * 32).seal("console-session", '{"sid": 1}')  # other prefix
    assert await sessions.open(sealed_elsewise) is None
