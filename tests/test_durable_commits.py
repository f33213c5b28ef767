"""Durable SQLite commits: a write returns after a sync of the WAL, shared by the writes
committed beside it; a conflict fails its own write alone; a failed sync fails writes
until a restart."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from session import SaveConflict, SQLiteStore, StoreUnavailable

from .records import turn

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


class Syncs:
    """A sync function that records what it synced, and fails when told to."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.folders = 0
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            self.folders += 1
            return
        if self.fail:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        with self.lock:
            self.files.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fdatasync(fd)


async def test_a_lone_write_syncs_the_wal_once(tmp_path: Path) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", sync=syncs)
    await store.save(turn("resp_1"))
    assert syncs.files == [str(tmp_path / "s.db-wal")]
    assert syncs.folders == 1  # when the WAL file was opened
    await store.save(turn("resp_2", "resp_1"))
    assert len(syncs.files) == 2 and syncs.folders == 1
    await store.close()


async def test_concurrent_writes_share_syncs_and_a_conflict_fails_only_its_own(
    tmp_path: Path,
) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", sync=syncs)
    await store.save(turn("resp_taken"))
    before = len(syncs.files)
    ids = [f"resp_{n}" for n in range(10)]
    ids[4] = "resp_taken"  # refused by the save policy, inside the batch
    results = await asyncio.gather(
        *(store.save(turn(response_id)) for response_id in ids), return_exceptions=True
    )
    assert [type(r).__name__ for r in results].count("SaveConflict") == 1
    assert isinstance(results[4], SaveConflict)
    assert all(r is None for n, r in enumerate(results) if n != 4)
    # The first write's sync started alone; every later one waited for the next sync.
    assert len(syncs.files) - before == 2
    await store.close()
    reopened = SQLiteStore(tmp_path / "s.db", synchronous="normal")
    for response_id in ids:
        await reopened.get("default", response_id)
    await reopened.close()


async def test_a_cancelled_write_leaves_the_shared_sync_to_the_others(tmp_path: Path) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_sync(fd: int) -> None:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            started.set()
            release.wait(30)
        os.fdatasync(fd)

    store = SQLiteStore(tmp_path / "s.db", sync=slow_sync)
    first = asyncio.ensure_future(store.save(turn("resp_1")))
    await asyncio.to_thread(started.wait, 30)
    waiting = [asyncio.ensure_future(store.save(turn(f"resp_{n}"))) for n in (2, 3)]
    await asyncio.sleep(0)
    waiting[0].cancel()
    release.set()
    await first
    await waiting[1]
    with pytest.raises(asyncio.CancelledError):
        await waiting[0]
    await store.get("default", "resp_2")  # committed before its caller gave up
    await store.close()


async def test_a_failed_sync_fails_the_write_and_every_write_after_it(tmp_path: Path) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", sync=syncs)
    await store.save(turn("resp_1"))
    syncs.fail = True
    with pytest.raises(StoreUnavailable) as caught:
        await store.save(turn("resp_2"))
    assert "restarted" in caught.value.message
    syncs.fail = False  # a later sync would succeed, yet vouches for nothing
    with pytest.raises(StoreUnavailable):
        await store.save(turn("resp_3"))
    with pytest.raises(StoreUnavailable):
        await store.ping()
    assert (await store.get("default", "resp_1")).id == "resp_1"  # reads go on
    await store.close()
    restarted = SQLiteStore(tmp_path / "s.db", sync=syncs)
    await restarted.save(turn("resp_3"))
    await restarted.close()


async def test_writes_waiting_for_the_next_sync_fail_with_the_current_one(
    tmp_path: Path,
) -> None:
    release = threading.Event()
    started = threading.Event()

    def failing_sync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            return
        started.set()
        release.wait(30)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    store = SQLiteStore(tmp_path / "s.db", sync=failing_sync)
    first = asyncio.ensure_future(store.save(turn("resp_1")))
    await asyncio.to_thread(started.wait, 30)
    second = asyncio.ensure_future(store.save(turn("resp_2")))
    await asyncio.sleep(0)
    release.set()
    for write in (first, second):
        with pytest.raises(StoreUnavailable):
            await write
    await store.close()


async def test_writes_nobody_waits_on_leave_the_sync_to_the_next_turn(tmp_path: Path) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", sync=syncs)
    started = turn("resp_1", status="in_progress")
    await store.save(started)
    await store.append_events("default", "resp_1", [(0, '{"type": "response.created"}')])
    await store.beat("instance-a", 1.0)
    assert syncs.files == []
    await store.save(turn("resp_1"), overwrite=True)  # the turn's end: synced, with them
    assert len(syncs.files) == 1
    await store.close()


async def test_normal_never_syncs(tmp_path: Path) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", synchronous="normal", sync=syncs)
    await asyncio.gather(*(store.save(turn(f"resp_{n}")) for n in range(5)))
    assert syncs.files == [] and syncs.folders == 0
    await store.close()


async def test_a_truncated_wal_keeps_its_inode_and_a_replaced_one_fails_writes(
    tmp_path: Path,
) -> None:
    syncs = Syncs()
    store = SQLiteStore(tmp_path / "s.db", sync=syncs)
    await store.save(turn("resp_1"))
    wal = tmp_path / "s.db-wal"
    inode = os.stat(wal).st_ino
    store.read_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert os.stat(wal).st_size == 0 and os.stat(wal).st_ino == inode
    await store.save(turn("resp_2"))
    assert syncs.folders == 1 and len(syncs.files) == 2  # still the file opened first
    # A WAL file replaced under the store (SQLite never does while it is open): SQLite
    # would go on writing to the old one, so no sync of the new one can vouch for it.
    (tmp_path / "copy").write_bytes(wal.read_bytes())
    os.replace(tmp_path / "copy", wal)
    with pytest.raises(StoreUnavailable) as caught:
        await store.save(turn("resp_3"))
    assert "replaced" in caught.value.message
    await store.close()


async def test_the_wal_starts_over_under_a_steady_stream_of_writes(tmp_path: Path) -> None:
    """Checkpoints catch up with the writes now and then, so the WAL is rewritten in place
    instead of growing with every turn ever written."""
    store = SQLiteStore(tmp_path / "s.db", synchronous="normal")
    wal = tmp_path / "s.db-wal"
    sizes = {}
    for n in range(1, 8_001):
        await store.save(turn(f"resp_{n}"))
        if n % 50 == 0:
            await asyncio.sleep(0.001)  # as a server's loop does between requests
        if n in (3_000, 8_000):
            sizes[n] = wal.stat().st_size
    await store.close()
    assert sizes[8_000] < 1.5 * sizes[3_000], sizes
