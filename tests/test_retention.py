"""``session.retention``: the gateway's own sweep deletes what is too old, once."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from session import MemoryStore, Pruned, SessionSettings, build_store

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .records import turn
from .servers import serve

pytestmark = [pytest.mark.api]

DAY = 86400.0


def seed(settings: SessionSettings, old: int) -> None:
    """``old`` turns 40 days old, then one fresh turn continuing the last of them."""

    async def run() -> None:
        store = build_store(settings)
        try:
            for n in range(old):
                record = turn(f"resp_old{n}")
                record.created_at -= 40 * DAY
                await store.save(record)
            await store.save(turn("resp_fresh", f"resp_old{old - 1}"))
        finally:
            await store.close()

    asyncio.run(run())


def wait_for(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the sweep did not run"
        time.sleep(0.02)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_instances_sweeping_delete_each_record_once(
    backend: str,
    request: Any,
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    session: dict[str, Any] = {
        "backend": backend,
        "retention": "30d",
        "retention_sweep_seconds": 0.05,
        "sqlite": {"path": str(tmp_path / "r.db")},
    }
    if backend == "postgres":
        session["postgres"] = {"dsn": request.getfixturevalue("postgres_dsn")}
    config = gateway_config(fake_upstream[1], tmp_path / "unused.db", session=session)
    seed(config.session, 450)
    caplog.set_level(logging.INFO, logger="gateway.turn.upkeep")

    def deleted() -> int:
        counts = re.findall(r"retention: deleted (\d+) response", caplog.text)
        return sum(int(count) for count in counts)

    with ExitStack() as running:
        urls = [running.enter_context(serve(create_app(config))) for _ in range(2)]
        wait_for(lambda: deleted() >= 450)
        url = urls[1]
        assert httpx.get(f"{url}/v1/responses/resp_old3").status_code == 404
        assert httpx.get(f"{url}/v1/responses/resp_fresh").status_code == 200
        continued = httpx.post(
            f"{url}/v1/responses",
            json={"model": "echo", "input": "more", "previous_response_id": "resp_fresh"},
        )
    assert deleted() == 450
    assert "WARNING" not in caplog.text and "ERROR" not in caplog.text
    assert continued.status_code == 400
    error = continued.json()["error"]
    assert error["param"] == "previous_response_id" and "resp_old449" in error["message"]


class SlowPruning(MemoryStore):
    """A store whose prune waits to be let through, and says how it ended."""

    def __init__(self) -> None:
        super().__init__()
        self.pruning = asyncio.Event()
        self.let_through = asyncio.Event()
        self.prunes: list[str] = []

    async def prune(self, before: float, limit: int) -> Pruned:
        self.pruning.set()
        try:
            await self.let_through.wait()
        except asyncio.CancelledError:
            self.prunes.append("cut")
            raise
        self.prunes.append("finished")
        return await super().prune(before, limit)


@pytest.mark.anyio
async def test_a_shutdown_lets_the_sweep_finish_the_store_operation_under_way(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    store = SlowPruning()
    session = {"retention": "30d", "retention_sweep_seconds": 0.05}
    app = create_app(
        gateway_config(fake_upstream[1], tmp_path / "r.db", session=session), store=store
    )
    async with app.router.lifespan_context(app):
        await asyncio.wait_for(store.pruning.wait(), 10)
        asyncio.get_running_loop().call_later(0.2, store.let_through.set)
    assert store.prunes == ["finished"]  # not cancelled mid-operation, and no other started
