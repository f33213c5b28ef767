"""What the gateway reports about its store and its upstream waits is what happens.

``/readyz`` fails when writes fail, not only reads; writers queued behind a locked SQLite
file give up within one busy timeout together; a streamed answer's head waits
``timeout_seconds``, its silences ``stream_idle_timeout_seconds``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway import create_app, parse_config

from .fake_upstream import FakeUpstream
from .misbehaving_upstream import SLOW_HEAD_SECONDS, misbehaving_app
from .servers import serve
from .test_store_faults import assert_unavailable, post, rows, sqlite_gateway, write_lock

pytestmark = [pytest.mark.api]


def secrets(path: Path) -> list[tuple[str, Any]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT name, value FROM gateway_secrets ORDER BY name").fetchall()


def assert_not_ready(url: str, problem: str) -> None:
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 503, ready.text
    assert ready.json()["status"] == "unavailable"
    assert problem in ready.json()["store"]
    assert ready.headers["retry-after"] == "1"


# -- readiness ---------------------------------------------------------------------------


def test_a_full_disk_makes_the_store_not_ready_until_it_has_room_again(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, store):
        first = post(url, {"model": "echo", "input": "fits"}).json()
        kept = secrets(path)
        store.connection.execute("VACUUM")  # no free page left inside the file either
        pages = store.connection.execute("PRAGMA page_count").fetchone()[0]
        store.connection.execute(f"PRAGMA max_page_count = {pages}")
        # Not ready before any turn failed to be saved, and while turns fail.
        assert_not_ready(url, "full")
        assert_unavailable(post(url, {"model": "echo", "input": "x" * 20_000}))
        assert_not_ready(url, "full")
        assert httpx.get(f"{url}/v1/responses/{first['id']}").status_code == 200
        assert httpx.get(f"{url}/healthz").status_code == 200

        store.connection.execute(f"PRAGMA max_page_count = {pages + 1000}")
        assert httpx.get(f"{url}/readyz").json() == {"status": "ok", "store": "ok"}
        assert post(url, {"model": "echo", "input": "room again"}).status_code == 200
        assert httpx.get(f"{url}/readyz").status_code == 200
    # The probes left no row behind.
    assert secrets(path) == kept
    assert [status for _, status in rows(path)] == ["completed", "completed"]


def test_a_read_only_database_is_not_ready_while_reads_still_work(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, store):
        first = post(url, {"model": "echo", "input": "stored"}).json()
        assert httpx.get(f"{url}/readyz").status_code == 200
        store.connection.execute("PRAGMA query_only = ON")
        assert_not_ready(url, "readonly")
        assert httpx.get(f"{url}/v1/responses/{first['id']}").status_code == 200
        store.connection.execute("PRAGMA query_only = OFF")
        assert httpx.get(f"{url}/readyz").status_code == 200


# -- writers queued behind a locked file -------------------------------------------------

BUSY_TIMEOUT_MS = 100  # what ``sqlite_gateway`` configures
WRITERS = 20
LOCK_HELD_TIMEOUTS = 12


async def _posts_while_locked(url: str, path: Path) -> list[httpx.Response]:
    """``WRITERS`` turns posted at once while another process holds the file's write lock,
    released once all are answered or after ``LOCK_HELD_TIMEOUTS`` busy timeouts."""
    async with httpx.AsyncClient(timeout=30) as client:
        with write_lock(path):
            posts = [
                asyncio.create_task(
                    client.post(f"{url}/v1/responses", json={"model": "echo", "input": f"w{n}"})
                )
                for n in range(WRITERS)
            ]
            await asyncio.wait(posts, timeout=LOCK_HELD_TIMEOUTS * BUSY_TIMEOUT_MS / 1000)
        return await asyncio.gather(*posts)


def test_writers_queued_behind_a_locked_file_all_give_up_within_one_busy_timeout(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    # Writers that each waited a busy timeout in turn would still be waiting when the
    # lock goes (the 13th to the 20th would then be stored): every one answering 503
    # shows each wait was bounded on its own, with an eleven-timeouts margin for a slow
    # machine rather than a measured duration.
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, _):
        answers = asyncio.run(_posts_while_locked(url, path))
        for answer in answers:
            assert_unavailable(answer)
            assert f"stayed locked for {BUSY_TIMEOUT_MS} ms" in answer.json()["error"]["message"]
        assert rows(path) == []
        assert post(url, {"model": "echo", "input": "unlocked"}).status_code == 200


# -- a streamed answer's head ------------------------------------------------------------


def _provider(url: str, timeout: float, idle: float) -> dict[str, Any]:
    return {
        "wire_api": "chat_completions",
        "base_url": f"{url}/v1",
        "api_key": "sk-slow-head",
        "timeout_seconds": timeout,
        "stream_idle_timeout_seconds": idle,
    }


@pytest.fixture(scope="module")
def slow_head_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``patient`` waits long for a head but little between chunks; ``impatient`` the
    other way round; both ask the upstream to hold its head ``SLOW_HEAD_SECONDS``."""
    long, short = 10 * SLOW_HEAD_SECONDS, SLOW_HEAD_SECONDS / 5
    with serve(misbehaving_app()) as upstream:
        config = parse_config(
            {
                "session": {"sqlite": {"path": str(tmp_path_factory.mktemp("head") / "s.db")}},
                "providers": {
                    "patient": _provider(upstream, timeout=long, idle=short),
                    "impatient": _provider(upstream, timeout=short, idle=long),
                },
                "models": {
                    "patient": {"provider": "patient", "upstream_model": "slow_head"},
                    "impatient": {"provider": "impatient", "upstream_model": "slow_head"},
                },
                "default_provider": "patient",
            },
            env={},
        )
        with serve(create_app(config)) as url:
            yield url


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_head_slower_than_the_idle_timeout_is_waited_for(
    slow_head_gateway: str, stream: bool
) -> None:
    with openai.OpenAI(
        base_url=f"{slow_head_gateway}/v1",
        api_key="k",
        max_retries=0,
        _strict_response_validation=True,
    ) as client:
        if stream:
            events = list(client.responses.create(model="patient", input="x", stream=True))
            assert events[-1].type == "response.completed"
            answer = events[-1].response
        else:
            answer = client.responses.create(model="patient", input="x")
        assert answer.status == "completed" and answer.output_text == "Hello"
        assert client.responses.retrieve(answer.id).status == "completed"


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_head_slower_than_timeout_seconds_is_504(
    slow_head_gateway: str, stream: bool
) -> None:
    body = {"model": "impatient", "input": "x", "stream": stream}
    answer = httpx.post(f"{slow_head_gateway}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 504, answer.text
    assert answer.json()["error"]["code"] == "upstream_timeout"
