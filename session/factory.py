"""Build a store from the ``session:`` section of the configuration."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .chain import DEFAULT_MAX_DEPTH
from .memory import MemoryStore
from .sqlite import SQLiteStore
from .store import SessionStore


class SQLiteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = "./data/sessions.db"
    busy_timeout_ms: int = Field(default=5000, ge=0)


class SessionSettings(BaseModel):
    """The ``session:`` section of ``config.yaml``."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "sqlite"] = "sqlite"
    max_chain_depth: int = Field(default=DEFAULT_MAX_DEPTH, ge=1)
    sqlite: SQLiteSettings = Field(default_factory=SQLiteSettings)


def build_store(settings: SessionSettings) -> SessionStore:
    """Return the backend ``settings`` names, ready to use (schema migrated)."""
    if settings.backend == "memory":
        return MemoryStore(max_depth=settings.max_chain_depth)
    return SQLiteStore(
        settings.sqlite.path,
        max_depth=settings.max_chain_depth,
        busy_timeout_ms=settings.sqlite.busy_timeout_ms,
    )
