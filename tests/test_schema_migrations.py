"""Migrations are frozen DDL: a fresh database and one migrated a version at a time match."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from session.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS
from session.sqlite.schema import migrate as migrate_sqlite

pytestmark = [pytest.mark.contract]


def _sqlite_schema(path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()


def test_a_fresh_sqlite_file_matches_one_migrated_a_version_at_a_time(tmp_path: Path) -> None:
    fresh, stepped = tmp_path / "fresh.db", tmp_path / "stepped.db"
    with closing(sqlite3.connect(fresh, isolation_level=None)) as conn:
        assert migrate_sqlite(conn) == len(SQLITE_MIGRATIONS)
    for version in range(1, len(SQLITE_MIGRATIONS) + 1):
        with closing(sqlite3.connect(stepped, isolation_level=None)) as conn:
            assert migrate_sqlite(conn, up_to=version) == version
    assert _sqlite_schema(fresh) == _sqlite_schema(stepped)
    assert len(_sqlite_schema(fresh)) > 20


_POSTGRES_CATALOG = {
    "columns": "SELECT table_name, column_name, ordinal_position, data_type, is_nullable,"
    " column_default, collation_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() ORDER BY 1, 3",
    "indexes": "SELECT tablename, indexname,"
    " replace(indexdef, current_schema() || '.', '') FROM pg_indexes"
    " WHERE schemaname = current_schema() ORDER BY 1, 2",
    "constraints": "SELECT c.table_name, c.constraint_name, c.constraint_type,"
    " string_agg(k.column_name, ',' ORDER BY k.ordinal_position)"
    " FROM information_schema.table_constraints c LEFT JOIN information_schema.key_column_usage k"
    " ON k.constraint_schema = c.constraint_schema AND k.constraint_name = c.constraint_name"
    " AND k.table_name = c.table_name"
    " WHERE c.table_schema = current_schema() AND c.constraint_type <> 'CHECK'"
    " GROUP BY 1, 2, 3 ORDER BY 1, 2",
    "checks": "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE contype = 'c' AND connamespace = current_schema()::regnamespace ORDER BY 1, 2",
    "triggers": "SELECT event_object_table, trigger_name, event_manipulation, action_statement"
    " FROM information_schema.triggers WHERE trigger_schema = current_schema() ORDER BY 1, 2",
}


async def _postgres_schema(dsn: str) -> dict[str, list[tuple[Any, ...]]]:
    import psycopg

    catalog: dict[str, list[tuple[Any, ...]]] = {}
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        for name, query in _POSTGRES_CATALOG.items():
            cursor = await conn.execute(query)
            catalog[name] = await cursor.fetchall()
    return catalog


@pytest.mark.anyio
async def test_a_fresh_postgres_schema_matches_one_migrated_a_version_at_a_time(
    postgres_dsn: str,
) -> None:
    import psycopg

    from bench.storage import throwaway_schema
    from session.postgres.schema import MIGRATIONS, migrate

    from .adapter_targets import postgres_base

    with throwaway_schema(postgres_base()) as stepped:
        async with await psycopg.AsyncConnection.connect(postgres_dsn) as conn:
            assert await migrate(conn) == len(MIGRATIONS)
        for version in range(1, len(MIGRATIONS) + 1):
            async with await psycopg.AsyncConnection.connect(stepped) as conn:
                assert await migrate(conn, up_to=version) == version
        fresh_schema, stepped_schema = (
            await _postgres_schema(postgres_dsn),
            await _postgres_schema(stepped),
        )
    assert fresh_schema == stepped_schema
    assert len(fresh_schema["columns"]) > 100


def test_version_one_is_the_schema_sqlite_utils_writes(tmp_path: Path) -> None:
    """Files the first releases made with sqlite-utils and files made fresh hold the same
    version 1: the frozen DDL is what sqlite-utils writes for those tables."""
    made = sqlite_utils.Database(tmp_path / "made.db")
    made["responses"].create(  # type: ignore[union-attr]
        {
            "project": str,
            "id": str,
            "previous_response_id": str,
            "conversation_id": str,
            "created_at": float,
            "completed_at": float,
            "status": str,
            "request": str,
            "response": str,
            "metadata": str,
        },
        pk=("project", "id"),
        not_null={"project", "id", "created_at", "status", "request", "response", "metadata"},
    )
    for columns in (["project", "previous_response_id"], ["project", "conversation_id"]):
        made["responses"].create_index(columns)  # type: ignore[union-attr]
    made["responses"].create_index(["project", "created_at"])  # type: ignore[union-attr]
    fresh = tmp_path / "fresh.db"
    with closing(sqlite3.connect(fresh, isolation_level=None)) as conn:
        migrate_sqlite(conn, up_to=1)
    made.close()
    assert _sqlite_schema(tmp_path / "made.db") == _sqlite_schema(fresh)
