"""Where the WAL's syncs run: in a process of their own, or on a thread where none starts.

:class:`ProcessSyncer` starts :mod:`.wal_syncer` as a process (one per store, so one per
``server.workers`` process) and asks it for each sync through a socket the event loop
watches: the loop writes a byte and reads the answer when it comes, and nothing in this
process runs meanwhile. A thread that syncs instead has to take the interpreter's lock
from the loop after each sync and hand the outcome back through the loop's own wakeup:
under load the two take turns for the lock, which costs both more than the sync's own
work. :class:`ThreadSyncer` does that, where a process cannot be started (a sandbox that
forbids it): it checks the WAL on the loop and syncs it on its thread.

Both answer each :meth:`request` once, on the loop, with ``None`` or the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import wal_syncer
from .wal_syncer import Faults, WALFile

Done = Callable[[Exception | None], None]
CLOSE_SECONDS = 30.0
"""How long closing waits for a sync under way, and then for the process to end."""


@dataclass(frozen=True)
class SyncHooks:
    """What tests change about the syncs (no configuration reaches these).

    ``faults``: a folder of :class:`~.wal_syncer.Faults` that fails, holds and logs the
    syncs. ``thread``: sync on a thread, as where no process starts. ``interpreter``: the
    Python that runs the sync process (one that does not start plays a sandbox).
    """

    faults: Path | None = None
    thread: bool = False
    interpreter: str = sys.executable


class NeverServed(Exception):
    """The sync process ended before it served: the syncs have to run on a thread."""


class Syncer(Protocol):
    def request(self, loop: asyncio.AbstractEventLoop, done: Done) -> None:
        """Sync the WAL; call ``done`` on ``loop`` with the outcome. Raise
        :class:`RuntimeError` once closed."""

    def close(self) -> None: ...


class ProcessSyncer:
    """The WAL synced by a process of its own, asked through a socket the loop watches."""

    def __init__(self, database: Path, hooks: SyncHooks) -> None:
        """Start the process (:class:`OSError` when it cannot be started)."""
        ours, theirs = socket.socketpair()
        command = [hooks.interpreter, "-I", "-S", wal_syncer.__file__, str(theirs.fileno())]
        command.append(str(database))
        if hooks.faults is not None:
            command.append(str(hooks.faults))
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),)
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        # A store dropped unclosed still ends its process, and leaves no zombie.
        self._stop = weakref.finalize(self, _stop, ours, self._process)
        self._received = b""
        self._served = False  # it said it serves
        self._ended = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: Done | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    def request(self, loop: asyncio.AbstractEventLoop, done: Done) -> None:
        if self._sock.fileno() < 0:
            raise RuntimeError("the sync process is stopped")
        if loop is not self._loop:
            self._watch(loop)
        self._done = done
        if self._ended:
            self._end()
            return
        try:
            self._sock.send(b"s")  # one byte into an empty buffer: never blocks
        except OSError:
            self._end()  # its answer is the end of the process

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        self._unwatch()
        loop.add_reader(self._sock.fileno(), self._readable)
        self._loop = loop

    def _unwatch(self) -> None:
        if self._loop is not None:
            with contextlib.suppress(Exception):  # a loop closed meanwhile watches nothing
                self._loop.remove_reader(self._sock.fileno())
            self._loop = None

    def _readable(self) -> None:
        try:
            received = self._sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            received = b""
        self._take(received)

    def _take(self, received: bytes) -> None:
        if not received:
            self._end()
            return
        self._received += received
        while b"\n" in self._received:
            line, _, self._received = self._received.partition(b"\n")
            if not self._served:
                self._served = line == wal_syncer.READY.rstrip()
                if not self._served:
                    self._end()
                continue
            done, self._done = self._done, None
            if done is not None:
                ok = line == wal_syncer.OK.rstrip()
                done(None if ok else OSError(line.decode(errors="replace")))

    def _end(self) -> None:
        """The process ended: the sync under way has failed, or never started."""
        self._ended = True
        self._unwatch()
        done, self._done = self._done, None
        if done is None:
            return
        if not self._served:
            done(NeverServed(f"the sync process ended at its start ({self._status()})"))
        else:
            done(OSError(f"the sync process ended ({self._status()})"))

    def _status(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=1)
        code = self._process.returncode
        return "still running" if code is None else f"exit status {code}"

    def close(self) -> None:
        """Wait for the sync under way (its writes hear how it went), then end the
        process and reap it."""
        if self._sock.fileno() < 0:
            return
        self._sock.settimeout(CLOSE_SECONDS)
        while self._done is not None:
            try:
                received = self._sock.recv(4096)
            except OSError:
                received = b""
            self._take(received)
        self._unwatch()
        self._stop()


def _stop(sock: socket.socket, process: subprocess.Popen[bytes]) -> None:
    sock.close()  # the process reads the end of its socket and exits
    try:
        process.wait(timeout=CLOSE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class ThreadSyncer:
    """The WAL checked on the loop and synced on a thread of its own."""

    def __init__(self, database: Path, hooks: SyncHooks) -> None:
        sync = os.fdatasync if hooks.faults is None else Faults(hooks.faults).sync
        self._file = WALFile(database, sync)
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-sync")

    def request(self, loop: asyncio.AbstractEventLoop, done: Done) -> None:
        # All but the sync itself happens on the loop: each time the thread takes the
        # interpreter's lock from the loop costs both of them more than the work it does.
        try:
            fd = self._file.check()
        except OSError as error:
            done(error)
            return
        self._thread.submit(self._sync, loop, done, fd)  # RuntimeError once shut down

    def _sync(self, loop: asyncio.AbstractEventLoop, done: Done, fd: int | None) -> None:
        error: Exception | None = None
        try:
            self._file.sync(fd)
        except Exception as failed:  # every waiter must hear of it
            error = failed
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(done, error)

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        self._file.close()
