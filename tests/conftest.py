from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from session import MemoryStore, SessionStore, SQLiteStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


StoreFactory = Callable[..., SessionStore]


def _memory(tmp_path: Path) -> StoreFactory:
    return lambda **options: MemoryStore(**options)


def _sqlite(tmp_path: Path) -> StoreFactory:
    return lambda **options: SQLiteStore(tmp_path / "sessions.db", **options)


BACKENDS: dict[str, Callable[[Path], StoreFactory]] = {"memory": _memory, "sqlite": _sqlite}


@pytest.fixture(params=list(BACKENDS))
def store_factory(request: Any, tmp_path: Path) -> StoreFactory:
    """Opens the backend under test with the given options (``max_depth``)."""
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
async def store(store_factory: StoreFactory) -> AsyncIterator[SessionStore]:
    opened = store_factory()
    yield opened
    await opened.close()
