from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from gateway import GatewayConfig, create_app, parse_config
from session import MemoryStore, SessionStore, SQLiteStore

from .fake_upstream import UPSTREAM_KEY, FakeUpstream
from .servers import serve


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


# -- the gateway over real HTTP, against a fake upstream --------------------------------


@dataclass
class Gateway:
    url: str
    config: GatewayConfig
    fake: FakeUpstream

    def client(self, **options: Any) -> OpenAI:
        return OpenAI(
            base_url=f"{self.url}/v1",
            api_key="client-key",
            max_retries=0,
            _strict_response_validation=True,
            **options,
        )

    def stored_rows(self) -> int:
        path = self.config.session.sqlite.path
        with closing(sqlite3.connect(path)) as conn:
            count: int = conn.execute("SELECT count(*) FROM responses").fetchone()[0]
            return count


def gateway_config(upstream_url: str, db_path: Path, **overrides: Any) -> GatewayConfig:
    raw: dict[str, Any] = {
        "session": {"backend": "sqlite", "sqlite": {"path": str(db_path)}},
        "providers": {
            "fake-chat": {
                "wire_api": "chat_completions",
                "base_url": f"{upstream_url}/v1",
                "api_key": UPSTREAM_KEY,
            },
            "fake-responses": {
                "wire_api": "responses",
                "base_url": f"{upstream_url}/v1",
                "api_key": UPSTREAM_KEY,
            },
            "echo": {"wire_api": "echo"},
        },
        "models": {
            "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
            "resp-model": {"provider": "fake-responses", "upstream_model": "upstream-resp"},
        },
        "default_provider": "echo",
    }
    raw.update(overrides)
    return parse_config(raw, env={})


@pytest.fixture(scope="session")
def fake_upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture
def gateway(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Gateway]:
    fake, url = fake_upstream
    fake.requests.clear()
    fake.headers.clear()
    fake.replies.clear()
    config = gateway_config(url, tmp_path / "sessions.db")
    with serve(create_app(config)) as gateway_url:
        yield Gateway(gateway_url, config, fake)
