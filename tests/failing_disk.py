"""A disk that fails, holds and counts the WAL's syncs, seen from the tests: the folder a
store's sync process (or thread) reads as :class:`session.sqlite.wal_syncer.Faults`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from session.sqlite.syncers import SyncHooks


class FailingDisk:
    """Turn syncs' failures and holds on and off; read what was synced."""

    def __init__(self, folder: Path, *, thread: bool = False) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.hooks = SyncHooks(faults=folder, thread=thread)

    def _synced(self) -> list[str]:
        log = self.folder / "log"
        return log.read_text().splitlines() if log.exists() else []

    @property
    def files(self) -> list[str]:
        """The paths of the files synced, in order."""
        return [line for line in self._synced() if line != "folder"]

    @property
    def folders(self) -> int:
        return self._synced().count("folder")

    @property
    def fail(self) -> bool:
        return (self.folder / "fail").exists()

    @fail.setter
    def fail(self, failing: bool) -> None:
        if failing:
            (self.folder / "fail").touch()
        else:
            (self.folder / "fail").unlink(missing_ok=True)

    def hold(self) -> None:
        """Make the next syncs of the WAL wait until :meth:`release`."""
        (self.folder / "held").unlink(missing_ok=True)
        (self.folder / "hold").touch()

    async def held(self) -> None:
        """Return once a sync is waiting (bounded: 30 s)."""
        for _ in range(3000):
            if (self.folder / "held").exists():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("no sync started")

    def release(self) -> None:
        (self.folder / "hold").unlink(missing_ok=True)
