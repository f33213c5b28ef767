"""The shared backend: PostgreSQL through psycopg 3 (an optional dependency)."""

from .store import PostgresStore

__all__ = ["PostgresStore"]
