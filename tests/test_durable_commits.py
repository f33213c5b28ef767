"""Durable SQLite commits: a write returns after a sync of the WAL, shared by the writes
committed beside it; a conflict fails its own write alone; a failed sync fails writes
until a restart. Each runs with the syncs in their process and on the thread that takes
over where no process starts."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from session import SaveConflict, SQLiteStore, StoreUnavailable

from .failing_disk import FailingDisk
from .records import turn

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


@pytest.fixture(params=["process", "thread"])
def disk(request: pytest.FixtureRequest, tmp_path: Path) -> FailingDisk:
    return FailingDisk(tmp_path / "disk", thread=request.param == "thread")


def open_store(path: Path, disk: FailingDisk) -> SQLiteStore:
    store = SQLiteStore(path, sync_hooks=disk.hooks)
    assert (store.sync_process is None) == disk.hooks.thread
    return store


async def test_a_lone_write_syncs_the_wal_once(tmp_path: Path, disk: FailingDisk) -> None:
    store = open_store(tmp_path / "s.db", disk)
    await store.save(turn("resp_1"))
    assert disk.files == [str(tmp_path / "s.db-wal")]
    assert disk.folders == 1  # when the WAL file was opened
    await store.save(turn("resp_2", "resp_1"))
    assert len(disk.files) == 2 and disk.folders == 1
    await store.close()


async def test_concurrent_writes_share_syncs_and_a_conflict_fails_only_its_own(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    await store.save(turn("resp_taken"))
    before = len(disk.files)
    ids = [f"resp_{n}" for n in range(10)]
    ids[4] = "resp_taken"  # refused by the save policy, inside the batch
    results = await asyncio.gather(
        *(store.save(turn(response_id)) for response_id in ids), return_exceptions=True
    )
    assert [type(r).__name__ for r in results].count("SaveConflict") == 1
    assert isinstance(results[4], SaveConflict)
    assert all(r is None for n, r in enumerate(results) if n != 4)
    # The first write's sync started alone; every later one waited for the next sync.
    assert len(disk.files) - before == 2
    await store.close()
    reopened = SQLiteStore(tmp_path / "s.db", synchronous="normal")
    for response_id in ids:
        await reopened.get("default", response_id)
    await reopened.close()


async def test_writes_arriving_during_a_sync_wait_for_the_next_one_together(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    disk.hold()
    first = asyncio.ensure_future(store.save(turn("resp_1")))
    await disk.held()
    later = [asyncio.ensure_future(store.save(turn(f"resp_{n}"))) for n in range(2, 7)]
    await asyncio.sleep(0.05)
    assert not any(write.done() for write in [first, *later])  # nobody answered unsynced
    disk.release()
    await asyncio.gather(first, *later)
    assert len(disk.files) == 2  # one sync for the first, one for all that came during it
    await store.close()


async def test_a_cancelled_write_leaves_the_shared_sync_to_the_others(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    disk.hold()
    first = asyncio.ensure_future(store.save(turn("resp_1")))
    await disk.held()
    waiting = [asyncio.ensure_future(store.save(turn(f"resp_{n}"))) for n in (2, 3)]
    await asyncio.sleep(0)
    waiting[0].cancel()
    disk.release()
    await first
    await waiting[1]
    with pytest.raises(asyncio.CancelledError):
        await waiting[0]
    await store.get("default", "resp_2")  # committed before its caller gave up
    await store.close()


async def test_a_failed_sync_fails_the_write_and_every_write_after_it(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    await store.save(turn("resp_1"))
    disk.fail = True
    with pytest.raises(StoreUnavailable) as caught:
        await store.save(turn("resp_2"))
    assert "restarted" in caught.value.message
    assert "Input/output error" in caught.value.message
    disk.fail = False  # a later sync would succeed, yet vouches for nothing
    synced = len(disk.files)
    with pytest.raises(StoreUnavailable):
        await store.save(turn("resp_3"))
    with pytest.raises(StoreUnavailable):
        await store.ping()
    assert len(disk.files) == synced  # not retried
    assert (await store.get("default", "resp_1")).id == "resp_1"  # reads go on
    await store.close()
    restarted = open_store(tmp_path / "s.db", disk)
    await restarted.save(turn("resp_3"))
    await restarted.close()


async def test_writes_waiting_for_the_next_sync_fail_with_the_current_one(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    disk.fail = True
    disk.hold()
    first = asyncio.ensure_future(store.save(turn("resp_1")))
    await disk.held()
    second = asyncio.ensure_future(store.save(turn("resp_2")))
    await asyncio.sleep(0)
    disk.release()
    for write in (first, second):
        with pytest.raises(StoreUnavailable):
            await write
    await store.close()


async def test_writes_nobody_waits_on_leave_the_sync_to_the_next_turn(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    started = turn("resp_1", status="in_progress")
    await store.save(started)
    await store.append_events("default", "resp_1", [(0, '{"type": "response.created"}')])
    await store.beat("instance-a", 1.0)
    assert disk.files == []
    await store.save(turn("resp_1"), overwrite=True)  # the turn's end: synced, with them
    assert len(disk.files) == 1
    await store.close()


async def test_normal_never_syncs(tmp_path: Path, disk: FailingDisk) -> None:
    store = SQLiteStore(tmp_path / "s.db", synchronous="normal", sync_hooks=disk.hooks)
    assert store.sync_process is None
    await asyncio.gather(*(store.save(turn(f"resp_{n}")) for n in range(5)))
    assert disk.files == [] and disk.folders == 0
    await store.close()


async def test_a_truncated_wal_keeps_its_inode_and_a_replaced_one_fails_writes(
    tmp_path: Path, disk: FailingDisk
) -> None:
    store = open_store(tmp_path / "s.db", disk)
    await store.save(turn("resp_1"))
    wal = tmp_path / "s.db-wal"
    inode = os.stat(wal).st_ino
    store.read_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert os.stat(wal).st_size == 0 and os.stat(wal).st_ino == inode
    await store.save(turn("resp_2"))
    assert disk.folders == 1 and len(disk.files) == 2  # still the file opened first
    # A WAL file replaced under the store (SQLite never does while it is open): SQLite
    # would go on writing to the old one, so no sync of the new one can vouch for it.
    (tmp_path / "copy").write_bytes(wal.read_bytes())
    os.replace(tmp_path / "copy", wal)
    with pytest.raises(StoreUnavailable) as caught:
        await store.save(turn("resp_3"))
    assert "replaced" in caught.value.message
    with pytest.raises(StoreUnavailable):  # and so is every write after it
        await store.save(turn("resp_4"))
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
