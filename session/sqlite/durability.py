"""Durable commits for the SQLite backend: one sync of the WAL file shared by many writes.

The connections commit with ``PRAGMA synchronous = NORMAL``: SQLite writes a commit's
frames (the last one flagged as a commit) to the ``-wal`` file and returns without a
sync. That survives the process crashing, as the frames are in the kernel's page cache,
but not a power loss. With ``session.sqlite.synchronous: full`` (the default) a write is
not answered until :class:`WALSync` has synced the WAL file after its commit.

Why a sync of the WAL after the commit makes the commit durable, from SQLite's own
documentation (wal.html and pragma.html#pragma_synchronous):

- In WAL mode a transaction is committed once its frames, the last one carrying the
  commit flag, are in the WAL file; recovery replays every committed frame whose
  checksums and salts match the WAL header. Writers "sync the WAL on every transaction
  commit if PRAGMA synchronous is set to FULL but omit this sync if [it] is set to
  NORMAL": FULL is exactly NORMAL plus a sync of the WAL after the commit, which is the
  sync done here, only shared between the commits that made it in time.
- With NORMAL, SQLite itself syncs the WAL before each checkpoint and the database file
  after each completed checkpoint, and syncs the WAL header when the WAL begins to be
  reused after a checkpoint. A commit that a checkpoint has copied into the database is
  therefore durable in the database file before the WAL is reset and its frames
  overwritten; a commit still in the WAL is durable once the WAL is synced.
- The file is synced by its inode: a checkpoint resets the WAL (overwrites it from the
  start) or truncates it, but SQLite deletes it only when the last connection closes,
  and this process keeps two open. The WAL is opened (and its folder synced, so that
  its name survives a power loss too) at the first sync, and checked at every sync: a
  WAL file replaced by something else is a failed sync, as SQLite goes on writing to
  the file it opened and a sync of the new one would vouch for nothing.

Group commit: a write that arrives while no sync runs starts one at once (a lone write
never waits for company); writes that arrive while a sync runs wait for the next one,
which starts as soon as the current one ends and releases all of them together. When the
last sync answered several writes (turns are arriving together), the next one first lets
the commits of the following ``GATHER_SECONDS`` join it. A turn that is still in progress
is saved without waiting for a sync (``durable=False``): it is acknowledged only when it
ends, and the sync of that save covers the earlier one. The
syncs run on a thread of their own: the event loop never blocks on one, and the write
lock is not held during a sync, so transactions go on committing meanwhile. Each
write's transaction, and the save policy inside it, stays its own; only the sync is
shared. Several processes on one file (``server.workers``) each sync after their own
commits, which is enough: a sync flushes the file, whoever wrote it.

A failed sync is not retried: after an fsync error Linux may drop the dirty pages it
could not write and report success on the next fsync (PostgreSQL's "fsyncgate"), so a
later success proves nothing about the commits waiting on the failed one. (The error
itself is seen: Linux reports a writeback error to every descriptor of the file open
when it happened, and the one synced here is opened before the writes it covers.) The
writes waiting on the failed sync fail with :class:`StoreUnavailable`, and so does
every write after it until the gateway is restarted (the restart recovers from what
the file really holds).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import StoreUnavailable

SyncFunction = Callable[[int], None]
GATHER_SECONDS = 0.0005
"""How long a sync waits for more commits to share it, when the last one had company."""


class _WALFile:
    """The ``-wal`` file of one database, opened (on the sync thread) to be synced."""

    def __init__(self, database: Path, sync: SyncFunction) -> None:
        self.path = Path(f"{database}-wal")
        self._folder = database.parent
        self._sync = sync
        self._fd: int | None = None

    def check(self) -> int | None:
        """On the loop: the open WAL's descriptor, once checked to be the database's WAL
        still (``None`` before the first sync opens it)."""
        if self._fd is None:
            return None
        inode = os.stat(self.path).st_ino  # FileNotFoundError: the WAL was removed
        if os.fstat(self._fd).st_ino != inode:
            # SQLite goes on writing to the file it opened: syncing the new one would
            # vouch for commits it does not hold.
            raise OSError(f"{self.path} was replaced under the open database")
        return self._fd

    def sync(self, fd: int | None) -> None:
        """On the sync thread: sync ``fd`` (``check``'s answer), opening the WAL first
        when it is not open yet."""
        self._sync(self._open() if fd is None else fd)

    def _open(self) -> int:
        inode = os.stat(self.path).st_ino
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        if os.fstat(self._fd).st_ino != inode:
            raise OSError(f"{self.path} was replaced under the open database")
        folder = os.open(self._folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._sync(folder)  # the WAL file's name, when it was just created
        finally:
            os.close(folder)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class WALSync:
    """Syncs the WAL file of one database after commits, one sync for many of them.

    Lives on the event loop: :meth:`after_commit` is called on the loop once a
    transaction committed, and returns when a sync that started after that commit
    has completed. Each waiter has a future of its own, which the sync thread's one
    callback on the loop resolves: a write resumes one loop iteration after its sync
    (a future shared through ``shield`` or ``run_in_executor`` costs two more).
    """

    def __init__(self, database: Path, sync: SyncFunction = os.fdatasync) -> None:
        self._file = _WALFile(database, sync)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-sync")
        self._running = False
        # The writes waiting for the next sync (touched on the loop only).
        self._waiters: list[asyncio.Future[None]] = []
        self._last_batch = 0
        self._failure: str | None = None
        self.syncs = 0

    def check(self) -> None:
        """Raise :class:`StoreUnavailable` once a sync has failed."""
        if self._failure is not None:
            raise StoreUnavailable(self._failure)

    async def after_commit(self) -> None:
        """Return once everything committed before this call is on the disk."""
        self.check()
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append(waiter)
        if not self._running:
            self._start(loop)
        # A cancelled caller cancels its own future only: the sync goes on for the others.
        await waiter

    def _take(self) -> list[asyncio.Future[None]]:
        """The writes the next sync answers: every one committed so far."""
        batch, self._waiters = self._waiters, []
        return batch

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._running = True
        if self._last_batch > 1:
            # Writes keep arriving while the last sync had company: let the commits of
            # the next moments join this sync. A write alone is synced at once.
            loop.call_later(GATHER_SECONDS, self._submit, loop)
        else:
            self._submit(loop)

    def _submit(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand a sync for every write committed so far to the sync thread. All but the
        sync itself happens here, on the loop: each time the thread takes the
        interpreter's lock from the loop costs both of them more than the work it does."""
        batch = self._take()
        try:
            fd = self._file.check()
        except OSError as error:
            self._finished(loop, batch, error)
            return
        try:
            self._thread.submit(self._sync, loop, batch, fd)
        except RuntimeError:  # the thread is shut down: the store is closed
            self._running = False
            self._fail(batch, "The session database is closed.")

    def _sync(
        self, loop: asyncio.AbstractEventLoop, batch: list[asyncio.Future[None]], fd: int | None
    ) -> None:
        """On the sync thread: sync for ``batch``, and hand the outcome to the loop."""
        error: Exception | None = None
        try:
            self._file.sync(fd)
        except Exception as failed:  # every waiter must hear of it
            error = failed
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(self._finished, loop, batch, error)

    def _finished(
        self,
        loop: asyncio.AbstractEventLoop,
        batch: list[asyncio.Future[None]],
        error: Exception | None,
    ) -> None:
        self._running = False
        self.syncs += 1
        self._last_batch = len(batch)
        if error is not None:
            self._failure = (
                f"The session database's journal could not be synced to the disk ({error}); "
                "writes are refused until the gateway is restarted."
            )
        if self._failure is not None:
            # The writes of the next sync committed after the failure: no later sync can
            # vouch for them either.
            self._fail(batch, self._failure)
            self._fail(self._take(), self._failure)
            return
        for waiter in batch:
            if not waiter.done():
                waiter.set_result(None)
        if self._waiters:
            self._start(loop)

    @staticmethod
    def _fail(batch: list[asyncio.Future[None]], message: str) -> None:
        for waiter in batch:
            if not waiter.done():
                waiter.set_exception(StoreUnavailable(message))
                waiter.exception()  # retrieved: a cancelled caller leaves no warning

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        self._file.close()
