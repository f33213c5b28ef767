from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from openai import OpenAI

from bench.storage import throwaway_schema
from gateway import GatewayConfig, create_app, parse_config
from session import MemoryStore, SessionStore, SQLiteStore

from .adapter_targets import (
    POSTGRES_SKIP,
    TARGETS,
    Target,
    gateway_process,
    open_target,
    postgres_base,
)
from .fake_anthropic import FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream
from .servers import serve

if TYPE_CHECKING:
    from .mcp_server import McpServer
from .tiers import settle_tiers


def pytest_configure(config: pytest.Config) -> None:
    """httpx's functions and clients wait 5 s by default, which a loaded machine can exceed;
    the suite's guard against a hang is each test's own time limit instead."""
    default = httpx._config.DEFAULT_TIMEOUT_CONFIG  # the object every default argument holds
    default.connect = default.read = default.write = default.pool = 100.0


POSTGRES_SKIP_LINE = postgres_base.__code__.co_firstlineno


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Every PostgreSQL test skipped for want of a database is reported at one place, so
    the summary has one line for them all instead of one per test."""
    report: pytest.TestReport = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and longrepr[2].endswith(POSTGRES_SKIP):
        report.longrepr = ("tests/adapter_targets.py", POSTGRES_SKIP_LINE, longrepr[2])
    return report


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the tiers it settles
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test has exactly one tier (``unit``, ``contract``, ``api`` or ``system``)."""
    settle_tiers(items)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


StoreFactory = Callable[..., SessionStore]


@pytest.fixture
def postgres_dsn() -> Iterator[str]:
    """A DSN whose search_path is a fresh, empty schema, dropped after the test."""
    with throwaway_schema(postgres_base()) as dsn:
        yield dsn


@pytest.fixture(scope="session")
def pgvector_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The DSN of a PostgreSQL server with pgvector, for the test session."""
    from .pgvector_server import pgvector_server

    with pgvector_server(tmp_path_factory.mktemp("pgvector")) as dsn:
        yield dsn


@pytest.fixture
def pgvector_dsn(pgvector_base: str) -> Iterator[str]:
    """A DSN whose search_path is a fresh schema of the pgvector server, dropped after."""
    with throwaway_schema(pgvector_base) as dsn:
        yield dsn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_factory(request: Any, tmp_path: Path) -> StoreFactory:
    """Opens the backend under test with the given options (``max_depth``)."""
    if request.param == "memory":
        return lambda **options: MemoryStore(**options)
    if request.param == "sqlite":
        return lambda **options: SQLiteStore(tmp_path / "sessions.db", **options)
    from session.postgres import PostgresStore

    dsn = request.getfixturevalue("postgres_dsn")
    return lambda **options: PostgresStore(dsn, **options)


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

    clients: list[OpenAI] = field(default_factory=list)

    def client(self, **options: Any) -> OpenAI:
        """A strict SDK client, closed when the test ends (with any stream it left open)."""
        options.setdefault("api_key", "client-key")
        client = OpenAI(
            base_url=f"{self.url}/v1", max_retries=0, _strict_response_validation=True, **options
        )
        self.clients.append(client)
        return client

    def stored_rows(self) -> int:
        path = self.config.session.sqlite.path
        with closing(sqlite3.connect(path)) as conn:
            count: int = conn.execute("SELECT count(*) FROM responses").fetchone()[0]
            return count


class ErrorLog(logging.Handler):
    """Collects every record at ERROR or above that the gateway logs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def errors() -> Iterator[ErrorLog]:
    """What the gateway logs at ERROR while a module's tests run (the fuzz tests assert none)."""
    handler = ErrorLog()
    logging.getLogger().addHandler(handler)
    yield handler
    logging.getLogger().removeHandler(handler)


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


@pytest.fixture(scope="module")
def anthropic_upstream() -> Iterator[tuple[FakeAnthropic, str]]:
    """A strict fake of Anthropic's Messages API, one per test module."""
    fake = FakeAnthropic()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture(autouse=True)
def fresh_fake_upstream(request: pytest.FixtureRequest) -> Iterator[None]:
    """The shared fake upstream, reset before and after each test that uses it (and started
    only for those): no test sees another's requests, scripted replies or context window."""
    if "fake_upstream" not in request.fixturenames:
        yield
        return
    fake: FakeUpstream = request.getfixturevalue("fake_upstream")[0]
    fake.reset()
    yield
    fake.reset()


@pytest.fixture
def gateway(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Gateway]:
    fake, url = fake_upstream
    config = gateway_config(url, tmp_path / "sessions.db")
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, fake)
        yield gateway
        for client in gateway.clients:
            client.close()


# -- the framework adapters' targets ---------------------------------------------------------


@pytest.fixture(scope="module")
def gateway_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``gateway serve`` process on SQLite, for one test module."""
    with gateway_process("sqlite", tmp_path_factory.mktemp("gateway-sqlite")) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``gateway serve`` process on PostgreSQL (a throwaway schema), for one test module."""
    with gateway_process("postgres", tmp_path_factory.mktemp("gateway-postgres")) as url:
        yield url


@pytest.fixture(params=TARGETS)
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    """Where an adapter runs: in process on each backend, or through a gateway process."""
    async for made in open_target(request, tmp_path):
        yield made


# -- MCP: a real MCP server on loopback, and a gateway allowed to reach it ----------------


@pytest.fixture(scope="module")
def dice() -> Iterator[McpServer]:
    """The test MCP server (``tests/mcp_server.py``), one per module."""
    from .mcp_server import mcp_server

    with mcp_server() as server:
        yield server


@pytest.fixture
def mcp(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> Iterator[Gateway]:
    """A gateway whose MCP allow list holds the test server (and nothing else)."""
    from .mcp_gateway import mcp_gateway

    with mcp_gateway(fake_upstream, tmp_path, dice) as gateway:
        yield gateway
