"""Build a store from the ``session:`` section of the configuration."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from .chain import DEFAULT_MAX_DEPTH
from .durations import parse_duration
from .errors import BackendNotInstalled
from .memory import MemoryStore
from .sqlite import SQLiteStore
from .store import SessionStore

Duration = Annotated[float, BeforeValidator(parse_duration)]


class SQLiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = "./data/sessions.db"
    busy_timeout_ms: int = Field(default=5000, ge=0)
    # full: a turn is answered once its commit is on the disk (survives a power loss);
    # normal: once it is in the OS (survives a crash of the gateway, not of the machine).
    synchronous: Literal["full", "normal"] = "full"


class PostgresSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dsn: str = ""
    pool_min: int = Field(default=1, ge=0)
    pool_max: int = Field(default=10, ge=1)
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    statement_timeout_seconds: float = Field(default=10.0, gt=0)


class SessionSettings(BaseModel):
    """The ``session:`` section of ``config.yaml``."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "sqlite", "postgres"] = "sqlite"
    max_chain_depth: int = Field(default=DEFAULT_MAX_DEPTH, ge=1)
    cache_turns: int = Field(default=20_000, ge=0)
    retention: Duration | None = None  # seconds; "30d" in config.yaml; None keeps forever
    retention_sweep_seconds: float = Field(default=300.0, gt=0)
    stream_events_seconds: float = Field(default=600.0, gt=0)  # kept for resuming, once done
    sqlite: SQLiteSettings = Field(default_factory=SQLiteSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)

    @model_validator(mode="after")
    def _postgres_needs_a_dsn(self) -> SessionSettings:
        if self.backend == "postgres" and not self.postgres.dsn:
            raise ValueError("postgres.dsn is required when backend is postgres")
        return self


POSTGRES_HINT = (
    "the postgres session backend needs psycopg: "
    "pip install -e '.[postgres]' in the gateway's checkout"
)


def check_backend_installed(settings: SessionSettings) -> None:
    """Raise :class:`BackendNotInstalled` if the chosen backend's driver is missing."""
    if settings.backend == "postgres":
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            raise BackendNotInstalled(POSTGRES_HINT) from None


def build_store(settings: SessionSettings) -> SessionStore:
    """Return the backend ``settings`` names, ready to use (schema migrated)."""
    if settings.backend == "memory":
        return MemoryStore(max_depth=settings.max_chain_depth, cache_turns=settings.cache_turns)
    if settings.backend == "postgres":
        check_backend_installed(settings)
        from .postgres import PostgresStore

        pg = settings.postgres
        return PostgresStore(
            pg.dsn,
            max_depth=settings.max_chain_depth,
            pool_min=pg.pool_min,
            pool_max=pg.pool_max,
            connect_timeout=pg.connect_timeout_seconds,
            statement_timeout=pg.statement_timeout_seconds,
            cache_turns=settings.cache_turns,
        )
    return SQLiteStore(
        settings.sqlite.path,
        max_depth=settings.max_chain_depth,
        busy_timeout_ms=settings.sqlite.busy_timeout_ms,
        cache_turns=settings.cache_turns,
        synchronous=settings.sqlite.synchronous,
    )
