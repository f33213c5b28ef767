"""The WAL file of one database, synced on request; and the process that does it.

:class:`WALFile` opens the ``-wal`` file (and syncs its folder, so that its name survives
a power loss too) at the first sync, and checks at every sync that the file at the WAL's
path is still the one open: SQLite goes on writing to the file it opened, so a WAL
replaced by something else is a failed sync. See :mod:`session.sqlite.durability` for
why a sync of it after a commit makes the commit durable.

Run as a program (``python -I -S wal_syncer.py FD DATABASE [FAULTS]``), it serves syncs
over the stream socket ``FD``: it answers ``ready`` once it serves, then reads one byte
per sync asked and answers each with a line, ``ok`` or the error. It ignores the signals
that stop a gateway (a terminal's Ctrl-C reaches every process of its group) and ends
when the socket's other end is closed: when the store closes, or its process is gone.
It imports nothing but the standard library, so that it starts in a few milliseconds
and a few megabytes.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

READY = b"ready\n"
OK = b"ok\n"
PARENT_CHECK_SECONDS = 1
"""How often an idle sync process checks that the process it serves is still there."""


def replaced(path: Path) -> OSError:
    return OSError(f"{path} was replaced under the open database")


class Faults:
    """A folder that plays a failing disk's part, for tests (nothing configures it).

    Before each sync of the WAL: while a file ``hold`` exists the sync waits (having
    created ``held``), and when a file ``fail`` exists it fails with EIO. Every sync is
    logged in ``log``: ``folder`` or the path of the file synced.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def sync(self, fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            self._log("folder")
            os.fdatasync(fd)
            return
        if (self.folder / "hold").exists():
            (self.folder / "held").touch()
            while (self.folder / "hold").exists():
                time.sleep(0.002)
        if (self.folder / "fail").exists():
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._log(os.readlink(f"/proc/self/fd/{fd}"))
        os.fdatasync(fd)

    def _log(self, line: str) -> None:
        with open(self.folder / "log", "a") as log:
            log.write(line + "\n")


class WALFile:
    """The ``-wal`` file of one database, opened at its first sync to be synced."""

    def __init__(self, database: Path, sync: Callable[[int], None] = os.fdatasync) -> None:
        self.path = Path(f"{database}-wal")
        self._folder = database.parent
        self._sync = sync
        self._fd: int | None = None
        self._inode = 0  # the open file's: a descriptor's file never changes

    def check(self) -> int | None:
        """The open WAL's descriptor, once checked to be the database's WAL still
        (``None`` before the first sync opens it)."""
        if self._fd is None:
            return None
        if os.stat(self.path).st_ino != self._inode:  # FileNotFoundError: it was removed
            raise replaced(self.path)
        return self._fd

    def sync(self, fd: int | None) -> None:
        """Sync ``fd`` (:meth:`check`'s answer), opening the WAL first when it is not open."""
        self._sync(self._open() if fd is None else fd)

    def _open(self) -> int:
        inode = os.stat(self.path).st_ino
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self._inode = os.fstat(self._fd).st_ino
        if self._inode != inode:
            raise replaced(self.path)
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


def _answer(wal: WALFile) -> bytes:
    try:
        wal.sync(wal.check())
    except OSError as error:
        return (" ".join(str(error).split()) or type(error).__name__).encode() + b"\n"
    return OK


def serve(sock: int, wal: WALFile) -> None:
    """Answer the syncs asked on ``sock`` until its other end is closed (or its parent,
    the process that started this one, is gone)."""
    parent = os.getppid()
    # A read that waits this long gives up (EAGAIN): one system call per sync, not two.
    view = socket.socket(fileno=sock)
    view.setsockopt(
        socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", PARENT_CHECK_SECONDS, 0)
    )
    view.detach()  # the descriptor stays open, read below
    os.write(sock, READY)
    while True:
        try:
            asked = os.read(sock, 64)
        except BlockingIOError:
            if os.getppid() != parent:
                return  # another process holds the socket's other end: nobody asks
            continue
        except ConnectionResetError:
            return
        if not asked:
            return
        for _ in asked:
            os.write(sock, _answer(wal))


def main(argv: list[str]) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        # The gateway stops on these and closes the store, which ends this process; until
        # then its turns still need their syncs.
        signal.signal(signum, signal.SIG_IGN)
    sock, database = int(argv[1]), Path(argv[2])
    wal = WALFile(database, Faults(Path(argv[3])).sync if len(argv) > 3 else os.fdatasync)
    try:
        serve(sock, wal)
    except BrokenPipeError:
        pass
    finally:
        wal.close()


if __name__ == "__main__":
    main(sys.argv)
