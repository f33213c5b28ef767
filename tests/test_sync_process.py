"""The process that syncs a store's WAL: it outlives the signals that stop a gateway until
the store closes it, ends with the store or the gateway, leaves no zombie, and where it
cannot start a thread syncs instead (said once in the log)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from session import SQLiteStore, StoreUnavailable
from session.sqlite.syncers import SyncHooks

from .failing_disk import FailingDisk
from .records import turn

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: only its parent's reaping is left)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def reaped(pid: int) -> bool:
    """Whether ``pid`` is gone, not even a zombie, and no child of this process."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not Path(f"/proc/{pid}").exists()
    return False


async def test_the_sync_process_outlives_the_signals_that_stop_a_gateway(
    tmp_path: Path,
) -> None:
    disk = FailingDisk(tmp_path / "disk")
    store = SQLiteStore(tmp_path / "s.db", sync_hooks=disk.hooks)
    await store.save(turn("resp_1"))
    pid = store.sync_process
    assert pid is not None
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        os.kill(pid, signum)
    await store.save(turn("resp_2"))
    assert len(disk.files) == 2 and running(pid)
    await store.close()


async def test_closing_the_store_ends_its_sync_process_and_reaps_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    await store.save(turn("resp_1"))
    pid = store.sync_process
    assert pid is not None and running(pid)
    await store.close()
    assert reaped(pid)


async def test_a_store_closed_before_its_first_sync_leaves_no_process(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    pid = store.sync_process
    assert pid is not None
    await store.close()
    assert reaped(pid)


async def test_a_sync_process_gone_fails_the_waiting_write_and_every_later_one(
    tmp_path: Path,
) -> None:
    disk = FailingDisk(tmp_path / "disk")
    store = SQLiteStore(tmp_path / "s.db", sync_hooks=disk.hooks)
    await store.save(turn("resp_1"))
    disk.hold()
    waiting = asyncio.ensure_future(store.save(turn("resp_2")))
    await disk.held()
    pid = store.sync_process
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # whether its sync completed, nobody can tell
    with pytest.raises(StoreUnavailable) as caught:
        await waiting
    assert "sync process ended" in caught.value.message
    disk.release()
    with pytest.raises(StoreUnavailable):
        await store.save(turn("resp_3"))
    await store.close()
    assert reaped(pid)


def test_the_sync_process_ends_when_its_gateway_is_gone(tmp_path: Path) -> None:
    """A gateway killed without closing its store: the sync process reads the end of its
    socket and exits."""
    script = textwrap.dedent(
        f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from session import SQLiteStore
        from tests.records import turn

        async def main():
            store = SQLiteStore({str(tmp_path / "s.db")!r})
            await store.save(turn("resp_1"))
            print(store.sync_process, flush=True)
            os._exit(0)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout)
    for _ in range(3000):  # bounded: 30 s
        if not running(pid):
            break
        time.sleep(0.01)
    assert not running(pid)


@pytest.mark.parametrize(
    ("interpreter", "why"),
    [("/nonexistent/python", "No such file"), ("/bin/false", "ended at its start")],
    ids=["cannot-start", "ends-at-start"],
)
async def test_where_no_sync_process_serves_a_thread_syncs_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, interpreter: str, why: str
) -> None:
    disk = FailingDisk(tmp_path / "disk")
    hooks = SyncHooks(faults=disk.folder, interpreter=interpreter)
    with caplog.at_level(logging.WARNING, logger="session.sqlite.durability"):
        store = SQLiteStore(tmp_path / "s.db", sync_hooks=hooks)
        await store.save(turn("resp_1"))
        await asyncio.gather(*(store.save(turn(f"resp_{n}")) for n in range(2, 6)))
    assert store.sync_process is None
    said = [r.getMessage() for r in caplog.records if "synced on a thread" in r.getMessage()]
    assert len(said) == 1 and why in said[0], said
    assert disk.files and disk.folders == 1  # still synced, by the thread
    disk.fail = True  # and a failed sync on the thread fails every later write too
    with pytest.raises(StoreUnavailable):
        await store.save(turn("resp_6"))
    disk.fail = False
    with pytest.raises(StoreUnavailable):
        await store.save(turn("resp_7"))
    await store.close()


def test_a_store_dropped_unclosed_still_ends_its_sync_process(tmp_path: Path) -> None:
    async def use() -> int:
        store = SQLiteStore(tmp_path / "s.db")
        await store.save(turn("resp_1"))
        assert store.sync_process is not None
        return store.sync_process

    pid = asyncio.run(use())  # the loop is closed, and the store unreferenced
    gc.collect()
    assert reaped(pid)
