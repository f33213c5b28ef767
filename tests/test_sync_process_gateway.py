"""The WAL's sync processes of a running ``gateway serve``: one per worker, outliving a
terminal's Ctrl-C while the turn under way is finished and synced, and gone with the
gateway."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import start_instance

pytestmark = [pytest.mark.system]

SYNC_PROGRAM = "wal_syncer.py"


def _config(tmp_path: Path, upstream_url: str, workers: int = 1) -> Path:
    config = tmp_path / "config.yaml"
    provider = {
        "wire_api": "chat_completions",
        "base_url": f"{upstream_url}/v1",
        "api_key": UPSTREAM_KEY,
    }
    config.write_text(
        yaml.safe_dump(
            {
                "server": {"workers": workers},
                "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
                "providers": {"fake": provider},
                "default_provider": "fake",
            }
        )
    )
    return config


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except FileNotFoundError:
        pass
    return found


def sync_processes(pid: int) -> dict[int, int]:
    """The sync processes under ``pid``: each one's pid, and its parent's."""
    found: dict[int, int] = {}
    for child in _children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if SYNC_PROGRAM.encode() in command:
            found[child] = pid
        else:
            found.update(sync_processes(child))
    return found


def running(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return SYNC_PROGRAM.encode() in command and state not in ("Z", "X")


def _wait_for(predicate: object, what: str) -> None:
    assert callable(predicate)
    for _ in range(600):  # bounded: 30 s
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def test_ctrl_c_during_a_turn_still_syncs_it_and_leaves_no_sync_process(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = fake_upstream
    held = threading.Event()
    fake.script(Reply(text="answered after Ctrl-C", gate=held))
    asked = len(fake.requests)
    # setsid: the gateway leads a process group of its own, as a shell's job does.
    process, url = start_instance(_config(tmp_path, upstream_url), prefix=["setsid"])
    try:
        syncers = sync_processes(process.pid)
        assert len(syncers) == 1 and set(syncers.values()) == {process.pid}
        with ThreadPoolExecutor(1) as pool:
            body = {"model": "m", "input": "a turn under way"}
            answer = pool.submit(httpx.post, f"{url}/v1/responses", json=body, timeout=60)
            _wait_for(lambda: len(fake.requests) > asked, "the turn reached the upstream")
            os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
            log = next(tmp_path.glob("gateway-*.log"))
            _wait_for(lambda: "Shutting down" in log.read_text(), "the gateway stopping")
            held.set()
            response = answer.result()
        assert response.status_code == 200, response.text
        process.wait(timeout=60)
    finally:
        held.set()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not any(running(pid) for pid in syncers)
    with sqlite3.connect(tmp_path / "s.db") as db:
        stored = db.execute("SELECT status FROM responses WHERE id = ?", (response.json()["id"],))
        assert stored.fetchall() == [("completed",)]


def test_each_worker_has_a_sync_process_of_its_own(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = fake_upstream
    process, url = start_instance(_config(tmp_path, upstream_url, workers=2))
    try:
        _wait_for(lambda: len(sync_processes(process.pid)) == 2, "two sync processes")
        syncers = sync_processes(process.pid)
        workers = set(syncers.values())
        assert len(workers) == 2 and process.pid not in workers
        fake.script(*(Reply(text=f"turn {n}") for n in range(4)))
        for n in range(4):
            turn = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": f"{n}"})
            assert turn.status_code == 200
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not any(running(pid) for pid in syncers)
