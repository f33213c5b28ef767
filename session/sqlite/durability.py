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
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreUnavailable

SyncFunction = Callable[[int], None]
GATHER_SECONDS = 0.0005
"""How long a sync waits for more commits to share it, when the last one had company."""


class _WALFile:
    """The ``-wal`` file of one database, opened to be synced (on the sync thread only)."""

    def __init__(self, database: Path, sync: SyncFunction) -> None:
        self.path = Path(f"{database}-wal")
        self._folder = database.parent
        self._sync = sync
        self._fd: int | None = None

    def sync(self) -> None:
        fd = self._open()
        self._sync(fd)

    def _open(self) -> int:
        inode = os.stat(self.path).st_ino  # FileNotFoundError: the WAL was removed
        if self._fd is not None:
            if os.fstat(self._fd).st_ino != inode:
                # SQLite goes on writing to the file it opened: syncing the new one
                # would vouch for commits it does not hold.
                raise OSError(f"{self.path} was replaced under the open database")
            return self._fd
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


@dataclass(frozen=True)
class _Batch:
    """The writes one sync answers: their shared future, and how many they are."""

    future: asyncio.Future[None] | None
    count: int


class WALSync:
    """Syncs the WAL file of one database after commits, one sync for many of them.

    Lives on the event loop: :meth:`after_commit` is called on the loop once a
    transaction committed, and returns when a sync that started after that commit
    has completed.
    """

    def __init__(self, database: Path, sync: SyncFunction = os.fdatasync) -> None:
        self._file = _WALFile(database, sync)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-sync")
        self._running = False
        # The waiters of the next sync, and how many they are; the sync thread takes
        # them under the lock when it gathers (see _sync).
        self._lock = threading.Lock()
        self._next: asyncio.Future[None] | None = None
        self._waiting = 0
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
        with self._lock:
            if self._next is None:
                self._next = loop.create_future()
            waiting = self._next
            self._waiting += 1
        if not self._running:
            self._start(loop)
        # A cancelled caller leaves the sync, shared with others, running.
        await asyncio.shield(waiting)

    def _take(self) -> _Batch:
        with self._lock:
            batch = _Batch(self._next, self._waiting)
            self._next, self._waiting = None, 0
        return batch

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._running = True
        # Writes keep arriving while the last sync had company: let the commits of the
        # next moments join this sync. A write alone is synced at once.
        gather = GATHER_SECONDS if self._last_batch > 1 else 0.0
        batch = None if gather else self._take()
        try:
            done = loop.run_in_executor(self._thread, self._sync, batch, gather)
        except RuntimeError:  # the thread is shut down: the store is closed
            self._running = False
            self._fail(batch or self._take(), "The session database is closed.")
            return
        done.add_done_callback(lambda finished: self._finished(loop, finished.result()))

    def _sync(self, batch: _Batch | None, gather: float) -> tuple[_Batch, OSError | None]:
        """On the sync thread: gather the waiters (when not given), then sync for them."""
        if batch is None:
            time.sleep(gather)
            batch = self._take()  # every one of them committed before this point
        try:
            self._file.sync()
        except OSError as error:
            return batch, error
        return batch, None

    def _finished(
        self, loop: asyncio.AbstractEventLoop, outcome: tuple[_Batch, OSError | None]
    ) -> None:
        batch, error = outcome
        self._running = False
        self.syncs += 1
        self._last_batch = batch.count
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
        if batch.future is not None and not batch.future.done():
            batch.future.set_result(None)
        if self._next is not None:
            self._start(loop)

    @staticmethod
    def _fail(batch: _Batch, message: str) -> None:
        future = batch.future
        if future is not None and not future.done():
            future.set_exception(StoreUnavailable(message))
            future.exception()  # retrieved: a cancelled waiter leaves no warning

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        self._file.close()
