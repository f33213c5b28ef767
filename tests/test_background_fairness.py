"""Background turns hold a bounded, fair share of a provider's connections.

The provider has 4 connections: background turns may hold 2 of them, one project 1.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from gateway.turn.concurrency import FairSlots

from .conftest import gateway_config
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

KEY_A = "sk-project-a-0123456789abcdef"
KEY_B = "sk-project-b-0123456789abcdef"
KEY_C = "sk-project-c-0123456789abcdef"
HANGING = 4  # as many hanging answers as the provider has connections


@dataclass
class Projects:
    url: str
    fake: FakeUpstream
    gate: threading.Event

    def post(self, key: str, **body: Any) -> httpx.Response:
        return httpx.post(
            f"{self.url}/v1/responses",
            json={"model": "chat-model", **body},
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )

    def status(self, key: str, response_id: str) -> str:
        response = httpx.get(
            f"{self.url}/v1/responses/{response_id}",
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        status: str = response.json()["status"]
        return status

    def upstream_saw(self, text: str) -> bool:
        return any(
            message.get("content") == text
            for request in list(self.fake.requests)
            for message in request["messages"]
        )


@pytest.fixture
def projects(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Projects]:
    fake, upstream_url = fake_upstream
    gate = threading.Event()
    fake.script(*(Reply(text="late", gate=gate) for _ in range(HANGING)))
    provider = {
        "wire_api": "chat_completions",
        "base_url": f"{upstream_url}/v1",
        "api_key": UPSTREAM_KEY,
        "max_connections": 4,
        "pool_timeout_seconds": 1,
    }
    auth = {
        "mode": "keys",
        "keys": [
            {"key": KEY_A, "project": "a"},
            {"key": KEY_B, "project": "b"},
            {"key": KEY_C, "project": "c"},
        ],
    }
    config = gateway_config(
        upstream_url,
        tmp_path / "s.db",
        auth=auth,
        providers={"fake-chat": provider},
        models={"chat-model": {"provider": "fake-chat"}},
        default_provider=None,
    )
    try:
        with serve(create_app(config)) as url:
            yield Projects(url, fake, gate)
            gate.set()
    finally:
        gate.set()


def until(condition: Any, what: str) -> None:
    """Wait for ``condition()`` (a bounded wait, not a speed check)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def queue_background(projects: Projects, key: str, count: int) -> list[str]:
    ids = []
    for n in range(count):
        created = projects.post(key, input=f"background {n}", background=True)
        assert created.status_code == 200 and created.json()["status"] == "queued"
        ids.append(created.json()["id"])
    return ids


def all_complete(projects: Projects, key: str, ids: list[str]) -> None:
    until(lambda: all(projects.status(key, r) == "completed" for r in ids), "all completed")


def answered_or_seen(projects: Projects, call: Future[httpx.Response], text: str) -> bool:
    return call.done() or projects.upstream_saw(text)


def test_a_backlog_of_background_turns_leaves_room_for_another_projects_turn(
    projects: Projects,
) -> None:
    backlog = queue_background(projects, KEY_A, 10)
    until(lambda: projects.upstream_saw("background 0"), "the first background turn ran")
    with ThreadPoolExecutor(max_workers=1) as pool:
        call = pool.submit(projects.post, KEY_B, input="in the foreground")
        until(lambda: answered_or_seen(projects, call, "in the foreground"), "B was served")
        # Project A holds its one share; the rest of its turns wait, truthfully queued.
        statuses = [projects.status(KEY_A, response_id) for response_id in backlog]
        projects.gate.set()
        foreground = call.result()
    assert foreground.status_code == 200, foreground.text
    assert foreground.json()["output"][0]["content"][0]["text"] == "late"
    assert statuses == ["in_progress"] + ["queued"] * 9
    all_complete(projects, KEY_A, backlog)  # each runs once a slot frees


def test_another_projects_background_turn_is_not_stuck_behind_a_backlog(
    projects: Projects,
) -> None:
    backlog = queue_background(projects, KEY_A, 6)
    until(lambda: projects.upstream_saw("background 0"), "the first background turn ran")
    (other,) = queue_background(projects, KEY_B, 1)
    until(
        lambda: projects.upstream_saw("background 0") and projects.status(KEY_B, other) != "queued",
        "B's background turn started",
    )
    assert projects.status(KEY_B, other) == "in_progress"
    assert [projects.status(KEY_A, r) for r in backlog[1:]] == ["queued"] * 5
    projects.gate.set()
    until(lambda: projects.status(KEY_B, other) == "completed", "B's turn completed")
    all_complete(projects, KEY_A, backlog)


def test_background_turns_of_all_projects_leave_half_the_pool_free(projects: Projects) -> None:
    a = queue_background(projects, KEY_A, 2)
    b = queue_background(projects, KEY_B, 2)
    (c,) = queue_background(projects, KEY_C, 1)
    until(
        lambda: projects.upstream_saw("background 0") and len(projects.fake.requests) == 2,
        "two background turns ran",
    )
    statuses = [projects.status(KEY_A, r) for r in a] + [projects.status(KEY_B, r) for r in b]
    assert statuses == ["in_progress", "queued"] * 2
    assert projects.status(KEY_C, c) == "queued"
    with ThreadPoolExecutor(max_workers=1) as pool:
        call = pool.submit(projects.post, KEY_C, input="in the foreground")
        until(lambda: answered_or_seen(projects, call, "in the foreground"), "C was served")
        projects.gate.set()
        assert call.result().status_code == 200
    all_complete(projects, KEY_A, a)
    all_complete(projects, KEY_B, b)
    all_complete(projects, KEY_C, [c])


def test_a_queued_background_turn_is_cancelled_before_it_runs(projects: Projects) -> None:
    first, waiting = queue_background(projects, KEY_A, 2)
    until(lambda: projects.upstream_saw("background 0"), "the first background turn ran")
    cancelled = httpx.post(
        f"{projects.url}/v1/responses/{waiting}/cancel",
        headers={"authorization": f"Bearer {KEY_A}"},
        timeout=30,
    )
    assert cancelled.json()["status"] == "cancelled"
    projects.gate.set()
    until(lambda: projects.status(KEY_A, first) == "completed", "the first completed")
    assert projects.status(KEY_A, waiting) == "cancelled"
    assert not projects.upstream_saw("background 1")


@pytest.mark.anyio
@pytest.mark.unit
async def test_a_freed_slot_goes_to_the_waiting_project_that_holds_fewest() -> None:
    slots = FairSlots(total=2, per_project=2)
    started: list[str] = []
    done = {name: asyncio.Event() for name in ("a1", "a2", "a3", "a4", "b1")}

    async def turn(name: str) -> None:
        async with slots.slot(name[0]):
            started.append(name)
            await done[name].wait()

    async def settle() -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    tasks = []
    for name in ("a1", "a2", "a3", "a4", "b1"):  # a3, a4 and b1 wait, in that order
        tasks.append(asyncio.create_task(turn(name)))
        await settle()
    assert started == ["a1", "a2"]
    done["a1"].set()
    await settle()
    assert started == ["a1", "a2", "b1"]  # b holds none: it goes before a's earlier turns
    tasks[3].cancel()  # a4 leaves the line
    done["a2"].set()
    await settle()
    assert started == ["a1", "a2", "b1", "a3"]
    done["a3"].set()
    done["b1"].set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert started == ["a1", "a2", "b1", "a3"]
