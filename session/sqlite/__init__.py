"""The embedded default backend: one SQLite file, safe for several processes at once."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
