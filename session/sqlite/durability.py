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
  its name survives a power loss too) at the first sync, and checked at every sync
  (:class:`~.wal_syncer.WALFile`): a
  WAL file replaced by something else is a failed sync, as SQLite goes on writing to
  the file it opened and a sync of the new one would vouch for nothing.

Group commit: a write that arrives while no sync runs starts one at once (a lone write
never waits for company); writes that arrive while a sync runs wait for the next one,
which starts as soon as the current one ends and releases all of them together. When the
last sync answered several writes (turns are arriving together), the next one first lets
the commits of the following ``GATHER_SECONDS`` join it. A turn that is still in progress
is saved without waiting for a sync (``durable=False``): it is acknowledged only when it
ends, and the sync of that save covers the earlier one. The
syncs run in a process of their own (:mod:`.syncers`, :mod:`.wal_syncer`), asked through
a socket the event loop watches, or on a thread where no process can be started: the
event loop never blocks on one, and the write lock is not held during a sync, so
transactions go on committing meanwhile. Each write's transaction, and the save policy
inside it, stays its own; only the sync is shared. Several processes on one file
(``server.workers``) each sync after their own commits, with a sync process of their
own, which is enough: a sync flushes the file, whoever wrote it. The sync process ignores
a terminal's Ctrl-C (and SIGTERM), so the turns a stopping gateway still finishes get
their syncs; it ends when the store closes its socket, or when the gateway is gone.

A failed sync is not retried: after an fsync error Linux may drop the dirty pages it
could not write and report success on the next fsync (PostgreSQL's "fsyncgate"), so a
later success proves nothing about the commits waiting on the failed one. (The error
itself is seen: Linux reports a writeback error to every descriptor of the file open
when it happened, and the one synced here is opened before the writes it covers.) The
writes waiting on the failed sync fail with :class:`StoreUnavailable`, and so does
every write after it until the gateway is restarted (the restart recovers from what
the file really holds). A sync process that ends while serving counts as a failed sync:
a new one could not be told of an error the old one would have seen.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ..errors import StoreUnavailable
from .syncers import NeverServed, ProcessSyncer, Syncer, SyncHooks, ThreadSyncer

logger = logging.getLogger(__name__)

GATHER_SECONDS = 0.0005
"""How long a sync waits for more commits to share it, when the last one had company."""


class WALSync:
    """Syncs the WAL file of one database after commits, one sync for many of them.

    Lives on the event loop: :meth:`after_commit` is called on the loop once a
    transaction committed, and returns when a sync that started after that commit
    has completed. Each waiter has a future of its own, which the syncer's one
    answer on the loop resolves: a write resumes one loop iteration after its sync
    (a future shared through ``shield`` or ``run_in_executor`` costs two more).
    """

    def __init__(self, database: Path, hooks: SyncHooks | None = None) -> None:
        self._database = database
        self._hooks = hooks or SyncHooks()
        self._syncer = self._start_syncer()
        self._running = False
        # The writes waiting for the next sync (touched on the loop only).
        self._waiters: list[asyncio.Future[None]] = []
        self._last_batch = 0
        self._failure: str | None = None
        self.syncs = 0

    def _start_syncer(self) -> Syncer:
        if not self._hooks.thread:
            try:
                return ProcessSyncer(self._database, self._hooks)
            except OSError as error:
                self._on_thread(error)
        return ThreadSyncer(self._database, self._hooks)

    def _on_thread(self, why: Exception) -> None:
        logger.warning(
            "The WAL of %s is synced on a thread: no sync process starts here (%s).",
            self._database,
            why,
        )

    @property
    def process(self) -> int | None:
        """The pid of the process that syncs, or ``None`` when a thread does."""
        return self._syncer.pid if isinstance(self._syncer, ProcessSyncer) else None

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
        """Ask for a sync for every write committed so far."""
        self._ask(loop, self._take())

    def _ask(self, loop: asyncio.AbstractEventLoop, batch: list[asyncio.Future[None]]) -> None:
        try:
            self._syncer.request(loop, lambda error: self._finished(loop, batch, error))
        except RuntimeError:  # the syncer is stopped: the store is closed
            self._running = False
            self._fail(batch, "The session database is closed.")

    def _finished(
        self,
        loop: asyncio.AbstractEventLoop,
        batch: list[asyncio.Future[None]],
        error: Exception | None,
    ) -> None:
        if isinstance(error, NeverServed):
            # Nothing was synced: the same writes go to a thread, for good.
            self._on_thread(error)
            self._syncer.close()
            self._syncer = ThreadSyncer(self._database, self._hooks)
            self._ask(loop, batch)
            return
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
        """Wait for the sync under way, then stop the syncer (and the thread that one's
        failure to serve may have put in its place meanwhile)."""
        while True:
            syncer = self._syncer
            syncer.close()
            if syncer is self._syncer:
                return
