"""Where the framework adapters' tests run: in process on each session backend, and through
a real ``gateway serve`` process (its own Python process) on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.storage import throwaway_schema
from session import MemoryStore, SessionStore, SQLiteStore
from session.agent_store import RemoteAgentStore

from .servers import start_instance

TARGETS = [
    "memory",
    "sqlite",
    "postgres",
    # Served by ``gateway serve`` processes: the system tier.
    pytest.param("remote-sqlite", marks=pytest.mark.system, id="remote-sqlite"),
    pytest.param("remote-postgres", marks=pytest.mark.system, id="remote-postgres"),
]
API_KEY = "sk-adapters-0123456789abcdef"
POSTGRES_DSN_VARIABLE = "GATEWAY_TEST_POSTGRES_DSN"


POSTGRES_SKIP = (
    f"PostgreSQL tests need a database: set {POSTGRES_DSN_VARIABLE}="
    "postgresql://postgres@127.0.0.1:5432/test (.ci/run does)"
)


def postgres_base() -> str:
    base = os.environ.get(POSTGRES_DSN_VARIABLE)
    if not base:
        pytest.skip(POSTGRES_SKIP)
    return base


@contextmanager
def gateway_process(backend: str, folder: Path) -> Iterator[str]:
    """``gateway serve`` on ``backend`` with an API key, in a process of its own."""
    schema = throwaway_schema(postgres_base()) if backend == "postgres" else nullcontext("")
    with schema as dsn:
        session: dict[str, Any] = {"backend": backend, "sqlite": {"path": str(folder / "s.db")}}
        if dsn:
            session["postgres"] = {"dsn": dsn}
        config = folder / "config.yaml"
        auth = {"mode": "keys", "keys": [{"key": API_KEY, "project": "agents"}]}
        raw = {"session": session, "auth": auth, "providers": {"echo": {"wire_api": "echo"}}}
        config.write_text(yaml.safe_dump(raw))
        process, url = start_instance(config)
        try:
            yield url
        finally:
            process.kill()
            process.wait()


@dataclass
class Target:
    """Makes adapters on one target, each in a namespace of its own unless told otherwise."""

    name: str
    store: SessionStore | None = None
    url: str | None = None
    made: list[Any] = field(default_factory=list)

    def adapter(self, cls: Any, *, namespace: str | None = None, **options: Any) -> Any:
        namespace = uuid.uuid4().hex if namespace is None else namespace
        if self.url is not None:
            made = cls.connect(self.url, api_key=API_KEY, namespace=namespace, **options)
        else:
            made = cls.from_store(self.store, namespace=namespace, **options)
        self.made.append(made)
        return made

    def agent_store(self) -> Any:
        """The agent Store of the project the adapters use, in process or remotely."""
        if self.url is not None:
            remote = RemoteAgentStore.connect(self.url, api_key=API_KEY)
            self.made.append(remote)
            return remote
        assert self.store is not None
        return self.store.agent("default")

    async def close(self) -> None:
        for made in self.made:
            closing = getattr(made, "aclose", None) or made.close
            await closing()
        if self.store is not None:
            await self.store.close()


async def open_target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    """The body of the ``target`` fixture (remote URLs come from the ``gateway_sqlite`` and
    ``gateway_postgres`` fixtures, one gateway process per test module)."""
    name: str = request.param  # type: ignore[attr-defined]
    if name.startswith("remote-"):
        target = Target(name, url=request.getfixturevalue(f"gateway_{name[7:]}"))
    elif name == "postgres":
        from session.postgres import PostgresStore

        target = Target(name, PostgresStore(request.getfixturevalue("postgres_dsn")))
    else:
        store = MemoryStore() if name == "memory" else SQLiteStore(tmp_path / "s.db")
        target = Target(name, store)
    yield target
    await target.close()
