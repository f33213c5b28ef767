"""How the SQLite backend runs its statements: writes on the event loop, reads beside it.

A write is a short transaction on a WAL file whose commits SQLite does not sync: running
it inline costs a fraction of handing it to a thread. With ``synchronous="full"`` (the
default) the write then waits, off the loop and without the write lock, for a sync of the
WAL that it shares with the writes committed beside it (:mod:`.durability`); with
``"normal"`` it returns at once, durable across a crash of the process but not of the
machine. A write never waits for a lock on the loop, though: the writer connection's
busy timeout is zero, and a write that finds another process
holding the file's lock is retried on the worker thread. The configured busy timeout
bounds the whole write, the time it spends queued behind this process's other writes
included: writers queued behind one lock all give up together, not one timeout apiece.
Reads (a long chain can take many milliseconds) run on one worker thread with a
connection of their own, and so do the WAL checkpoints that commits would otherwise do
inline.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

from ..errors import StoreUnavailable
from .durability import WALSync
from .schema import migrate
from .syncers import SyncHooks

T = TypeVar("T")

CHECKPOINT_EVERY_WRITES = 500
RESTART_EVERY_CHECKPOINTS = 4  # the WAL then holds at most about 2,000 writes

Synchronous = Literal["full", "normal"]


def _connect(path: str, busy_timeout_ms: int, *, wal: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    if wal:
        _enable_wal(conn, busy_timeout_ms)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Switch the file to WAL; SQLite answers BUSY at once (no busy wait) while another
    process opening the same file holds its lock, so wait here."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class _Busy(Exception):
    """Another process holds the file's write lock."""


_PROBE_NAME = "\x00write probe"  # no secret's name starts with a NUL


def _probe_write(conn: sqlite3.Connection) -> None:
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute(
        "INSERT INTO gateway_secrets (name, value) VALUES (?, zeroblob(?))",
        (_PROBE_NAME, page_size),
    )
    conn.execute("DELETE FROM gateway_secrets WHERE name = ?", (_PROBE_NAME,))


class SQLiteConnections:
    """The writer and reader connections of one database file, and the thread they share."""

    def __init__(
        self,
        path: str | Path,
        busy_timeout_ms: int,
        *,
        synchronous: Synchronous = "full",
        sync_hooks: SyncHooks | None = None,
    ) -> None:
        """``sync_hooks``: what tests change about the syncs (see :class:`SyncHooks`)."""
        if synchronous not in ("full", "normal"):
            raise ValueError(f"synchronous must be full or normal, not {synchronous!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self.writer = _connect(str(path), self._busy_timeout_ms, wal=True)
        self.schema_version = migrate(self.writer)
        self.writer.execute("PRAGMA busy_timeout = 0")
        self.writer.execute("PRAGMA wal_autocheckpoint = 0")
        self.reader = _connect(str(path), self._busy_timeout_ms, wal=False)
        # Held open to notice the file being unlinked (its link count drops to zero).
        self._file = os.open(self.path, os.O_RDONLY)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._write_lock = asyncio.Lock()
        self._writes = 0
        self._checkpointing: asyncio.Task[None] | None = None
        self._checkpoints = 0
        self.wal_sync = WALSync(self.path, sync_hooks) if synchronous == "full" else None

    # -- the file under the connections ------------------------------------------------

    def _check_file(self) -> None:
        """Refuse to go on when the file was removed or replaced under the open connections.

        SQLite would keep writing to the unlinked file and report success: every such
        write would be lost at the next start.
        """
        if os.fstat(self._file).st_nlink == 0:
            raise StoreUnavailable(
                f"The session database file {self.path} was removed or replaced; "
                "restore it or restart the gateway."
            )

    def _guarded(self, fn: Callable[[], T], *, check_file: bool = True) -> T:
        """Run ``fn``; the database's own failures become :class:`StoreUnavailable`."""
        try:
            if check_file:
                self._check_file()
            return fn()
        except sqlite3.IntegrityError:
            raise
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode == sqlite3.SQLITE_BUSY:
                raise _Busy from None
            raise StoreUnavailable(f"The session database cannot be used ({error}).") from None
        except sqlite3.DatabaseError as error:
            raise StoreUnavailable(f"The session database cannot be used ({error}).") from None
        except sqlite3.ProgrammingError:
            raise StoreUnavailable("The session database is closed.") from None

    async def _on_thread(self, fn: Callable[[], T]) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, fn)
        except RuntimeError as error:  # the executor is shut down: the store is closed
            raise StoreUnavailable(f"The session database is closed ({error}).") from None

    # -- reads and writes --------------------------------------------------------------

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read on the worker thread."""

        def call() -> T:
            try:
                return self._guarded(lambda: fn(self.reader))
            except _Busy:
                raise StoreUnavailable("The session database stayed locked.") from None

        return await self._on_thread(call)

    async def read_now(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a short, bounded read inline on the writer connection (no thread hop)."""
        async with self._write_lock:
            try:
                return self._guarded(lambda: fn(self.writer))
            except _Busy:
                raise StoreUnavailable("The session database is locked.") from None

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self.writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            self._check_file()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, durable: bool = True) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction, inline unless the file is locked.

        The write waits at most the busy timeout in all: for this process's earlier
        writes, then for another process's lock on the file. With durable commits it
        returns once its commit is on the disk (the sync is not bounded by the timeout),
        unless ``durable`` is false: then a later durable write's sync covers it.
        """
        if self.wal_sync is not None:
            self.wal_sync.check()
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        await self._take_write_lock(deadline)
        try:
            # ``_transaction`` checks the file before it commits.
            result = self._guarded(lambda: self._transaction(fn), check_file=False)
        except _Busy:
            result = await self._on_thread(self._waiting_write(fn, deadline))
        finally:
            self._write_lock.release()
        self._writes += 1
        if self._writes % CHECKPOINT_EVERY_WRITES == 0 and self._checkpointing is None:
            self._checkpointing = asyncio.create_task(self._checkpoint_between_writes())
        if self.wal_sync is not None and durable:
            await self.wal_sync.after_commit()
        return result

    async def _take_write_lock(self, deadline: float) -> None:
        if not self._write_lock.locked():  # a free lock needs no timer
            await self._write_lock.acquire()
            return
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                await self._write_lock.acquire()
        except TimeoutError:
            raise self._stayed_locked() from None

    def _stayed_locked(self) -> StoreUnavailable:
        return StoreUnavailable(
            f"The session database stayed locked for {self._busy_timeout_ms} ms."
        )

    def _waiting_write(
        self, fn: Callable[[sqlite3.Connection], T], deadline: float
    ) -> Callable[[], T]:
        def call() -> T:
            # What is left of the write's time, once queued on the loop and the thread.
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise self._stayed_locked()
            self.writer.execute(f"PRAGMA busy_timeout = {left_ms}")
            try:
                return self._guarded(lambda: self._transaction(fn), check_file=False)
            except _Busy:
                raise self._stayed_locked() from None
            finally:
                self.writer.execute("PRAGMA busy_timeout = 0")

        return call

    async def check_writes(self) -> None:
        """Raise :class:`StoreUnavailable` unless a write can be committed now.

        The probe commits a row of one page and deletes it again in the same
        transaction, so it leaves nothing behind but fails as a turn's save would: when
        the file is read-only, or neither the free pages of the file nor the disk (or
        SQLite's page limit) have room for a page. A transaction rolled back instead
        would never reach the disk (WAL frames are written at commit), and a failure
        remembered from the last save would stay until traffic came back, which a
        gateway reported not ready does not get.
        """
        await self.write(_probe_write)

    async def _checkpoint_between_writes(self) -> None:
        """Copy the WAL into the database file, the last frames while this process's
        writes wait (the loop does not): a checkpoint run beside a steady stream of
        writes never catches up with them, so the WAL is never started again from its
        beginning and grows without bound, and every sync of a growing file costs several
        times one of a file rewritten in place. Once a checkpoint has copied every frame,
        the next write starts the WAL over. Most of the copying (and its syncs) happens
        beside the writes; they wait (a few milliseconds) only for what came meanwhile, and
        only every ``RESTART_EVERY_CHECKPOINTS``-th time."""
        try:
            with contextlib.suppress(StoreUnavailable):  # closed meanwhile: nothing to copy
                await self._on_thread(self._checkpoint)  # most of the WAL, beside the writes
                self._checkpoints += 1
                if self._checkpoints % RESTART_EVERY_CHECKPOINTS == 0:
                    async with self._write_lock:  # then the frames written meanwhile
                        await self._on_thread(self._checkpoint)
        finally:
            self._checkpointing = None

    def _checkpoint(self) -> None:
        # A failed checkpoint is left to the next one; a failing store reports itself on
        # its own calls.
        with contextlib.suppress(sqlite3.Error):
            self.reader.execute("PRAGMA wal_checkpoint(PASSIVE)")

    async def close(self) -> None:
        if self._checkpointing is not None:
            await self._checkpointing
        if self.wal_sync is not None:
            self.wal_sync.close()
        self._thread.shutdown(wait=True)
        self.reader.close()
        self.writer.close()
        os.close(self._file)
