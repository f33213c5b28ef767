"""The store failing under a running gateway: never a 500, never an acknowledged turn lost.

Each fault is played on the real database: SQLite's write lock held by another process,
a full disk (SQLite's page limit), a read-only database, the data folder removed, and
PostgreSQL stalled behind a TCP proxy.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from session import RequestSnapshot, SQLiteStore, StoredResponse

from .conftest import gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve
from .tcp_proxy import proxied_postgres

pytestmark = [pytest.mark.api]


@contextmanager
def sqlite_gateway(
    fake_upstream: tuple[FakeUpstream, str], path: Path
) -> Iterator[tuple[str, SQLiteStore]]:
    store = SQLiteStore(path, busy_timeout_ms=100)
    config = gateway_config(fake_upstream[1], path)
    with serve(create_app(config, store=store)) as url:
        yield url, store


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/responses", json=body, timeout=30)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "store_unavailable"
    assert response.headers["retry-after"] == "1"
    assert "Traceback" not in response.text


def rows(path: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT id, status FROM responses ORDER BY created_at").fetchall()


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Another process's transaction holding the file's write lock."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")


def sse_events(url: str, body: dict[str, Any], during: Any = None) -> list[dict[str, Any]]:
    """A streamed turn's events; ``during`` (a context manager) opens after the first one."""
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=30) as response:
        assert response.status_code == 200
        lines = (line for line in response.iter_lines() if line.startswith("data: "))
        events.append(json.loads(next(lines).removeprefix("data: ")))
        with during or contextmanager(lambda: iter([None]))():
            events += [json.loads(line.removeprefix("data: ")) for line in lines]
    return events


def test_a_write_lock_held_past_the_busy_timeout_is_503(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, _):
        with write_lock(path):
            assert_unavailable(post(url, {"model": "chat-model", "input": "x"}))
            assert_unavailable(post(url, {"model": "chat-model", "input": "x", "stream": True}))
            assert httpx.get(f"{url}/healthz").status_code == 200
        assert rows(path) == []
        assert post(url, {"model": "chat-model", "input": "again"}).status_code == 200


def test_a_stream_whose_end_cannot_be_stored_ends_failed_then_is_stored_failed(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, _):
        fake_upstream[0].script(Reply(text="words that arrive slowly", delay=0.05))
        body = {"model": "chat-model", "input": "x", "stream": True}
        events = sse_events(url, body, during=write_lock(path))
        terminal = events[-1]
        assert terminal["type"] == "response.failed"
        assert "could not be stored" in terminal["response"]["error"]["message"]
        assert [e["type"] for e in events].count("response.completed") == 0
        response_id = terminal["response"]["id"]
        for _ in range(100):  # bounded wait for the retry once the lock is gone
            if rows(path) == [(response_id, "failed")]:
                break
            time.sleep(0.1)
        assert rows(path) == [(response_id, "failed")]


def test_a_full_disk_is_503_and_leaves_nothing_half_written(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, store):
        first = post(url, {"model": "echo", "input": "fits"}).json()
        pages = store.connection.execute("PRAGMA page_count").fetchone()[0]
        store.connection.execute(f"PRAGMA max_page_count = {pages}")
        big = {"model": "echo", "input": "x" * 200_000, "previous_response_id": first["id"]}
        assert_unavailable(post(url, big))
        assert_unavailable(post(url, {**big, "stream": True}))
        assert rows(path) == [(first["id"], "completed")]
        assert httpx.get(f"{url}/v1/responses/{first['id']}").status_code == 200


def test_a_read_only_database_is_503(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, store):
        first = post(url, {"model": "echo", "input": "stored"}).json()
        store.connection.execute("PRAGMA query_only = ON")
        assert_unavailable(post(url, {"model": "echo", "input": "refused"}))
        assert httpx.get(f"{url}/v1/responses/{first['id']}").status_code == 200
        store.connection.execute("PRAGMA query_only = OFF")
        assert post(url, {"model": "echo", "input": "writable again"}).status_code == 200


def test_a_removed_data_folder_fails_loudly(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "data" / "s.db"
    with sqlite_gateway(fake_upstream, path) as (url, _):
        first = post(url, {"model": "echo", "input": "stored"}).json()
        assert httpx.get(f"{url}/readyz").status_code == 200
        shutil.rmtree(path.parent)
        assert_unavailable(post(url, {"model": "echo", "input": "would be lost"}))
        assert_unavailable(httpx.get(f"{url}/v1/responses/{first['id']}"))
        ready = httpx.get(f"{url}/readyz")
        assert ready.status_code == 503 and "removed" in ready.json()["store"]
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_turns_left_in_progress_by_a_crash_are_failed_at_the_next_start(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    path = tmp_path / "s.db"
    crashed = StoredResponse(
        id="resp_crashed",
        status="in_progress",
        created_at=time.time() - 86_400,
        request=RequestSnapshot.model_validate({"model": "echo", "input": "lost"}),
    )
    with sqlite_gateway(fake_upstream, path):
        pass
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "INSERT INTO responses (project, id, created_at, status, request, response, metadata)"
            " VALUES ('default', ?, ?, 'in_progress', ?, ?, '{}')",
            (
                crashed.id,
                crashed.created_at,
                crashed.request.model_dump_json(),
                crashed.response.model_dump_json(),
            ),
        )
        conn.commit()
    with sqlite_gateway(fake_upstream, path) as (url, _):
        for _ in range(100):  # bounded wait for the start-up sweep
            stored = httpx.get(f"{url}/v1/responses/resp_crashed").json()
            if stored["status"] == "failed":
                break
            time.sleep(0.05)
        assert stored["status"] == "failed"
        assert "stopped before it finished" in stored["error"]["message"]
        continued = post(
            url, {"model": "echo", "input": "x", "previous_response_id": "resp_crashed"}
        )
        assert continued.status_code == 400
        assert continued.json()["error"]["code"] == "turn_not_continuable"


def test_a_stalled_postgres_is_503_within_its_timeouts(
    postgres_dsn: str, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    with proxied_postgres(postgres_dsn) as (proxy, dsn):
        timeouts = {"connect_timeout_seconds": 1, "statement_timeout_seconds": 0.5}
        session = {"backend": "postgres", "postgres": {"dsn": dsn, **timeouts}}
        config = gateway_config(fake_upstream[1], tmp_path / "unused.db", session=session)
        with serve(create_app(config)) as url:
            first = post(url, {"model": "echo", "input": "hello"}).json()
            proxy.pause()
            assert_unavailable(post(url, {"model": "echo", "input": "stalled"}))
            assert_unavailable(httpx.get(f"{url}/v1/responses/{first['id']}", timeout=30))
            assert httpx.get(f"{url}/readyz", timeout=30).status_code == 503
            proxy.resume()
            for _ in range(50):  # bounded wait for the pool to replace its connections
                again = httpx.get(f"{url}/v1/responses/{first['id']}", timeout=30)
                if again.status_code == 200:
                    break
                time.sleep(0.2)
            assert again.status_code == 200
