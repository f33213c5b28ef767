"""The SQLite schema, created and migrated step by step under ``PRAGMA user_version``."""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils

from .agent_store.calls import SCHEMA as ADAPTER_SCHEMA
from .agent_store.sql import SCHEMA as AGENT_SCHEMA
from .agent_store.sql import ddl


def _v1_responses(db: sqlite_utils.Database) -> None:
    db.table("responses").create(
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
    table = db.table("responses")
    table.create_index(["project", "previous_response_id"])
    table.create_index(["project", "conversation_id"])
    table.create_index(["project", "created_at"])


def _v2_conversations(db: sqlite_utils.Database) -> None:
    db.table("conversations").create(
        {"project": str, "id": str, "created_at": float, "metadata": str, "next_seq": int},
        pk=("project", "id"),
        not_null={"project", "id", "created_at", "metadata", "next_seq"},
    )
    # sqlite-utils cannot declare a composite foreign key; the table is written by hand.
    db.execute(
        """
        CREATE TABLE conversation_items (
            project TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            item TEXT NOT NULL,
            PRIMARY KEY (project, conversation_id, seq),
            UNIQUE (project, conversation_id, id),
            FOREIGN KEY (project, conversation_id)
                REFERENCES conversations (project, id) ON DELETE CASCADE
        )
        """
    )


def _v3_unfinished_index(db: sqlite_utils.Database) -> None:
    # The sweep of turns left unfinished by a crash reads only these few rows.
    db.execute(
        "CREATE INDEX responses_unfinished ON responses (created_at)"
        " WHERE status IN ('in_progress', 'queued')"
    )


def _v4_drop_unread_indexes(db: sqlite_utils.Database) -> None:
    # No query looks turns up by parent or by conversation; every index costs each insert.
    db.execute("DROP INDEX idx_responses_project_previous_response_id")
    db.execute("DROP INDEX idx_responses_project_conversation_id")


def _v5_keys_and_retention(db: sqlite_utils.Database) -> None:
    db.execute(
        """
        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT,
            secret_hash TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL,
            revoked_at REAL,
            requests_per_minute INTEGER
        )
        """
    )
    # Retention deletes by age across projects: the index leads with the time.
    db.execute("DROP INDEX idx_responses_project_created_at")
    db.execute("CREATE INDEX responses_created ON responses (created_at)")
    db.execute("ALTER TABLE conversations ADD COLUMN updated_at REAL")
    db.execute("UPDATE conversations SET updated_at = created_at")
    db.execute("CREATE INDEX conversations_updated ON conversations (updated_at)")


def _v6_response_events(db: sqlite_utils.Database) -> None:
    db.execute(
        """
        CREATE TABLE response_events (
            project TEXT NOT NULL,
            response_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            event TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (project, response_id, seq)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX response_events_created ON response_events (created_at)")


def _v7_secrets(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE gateway_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _v8_agent_store(db: sqlite_utils.Database) -> None:
    for statement in AGENT_SCHEMA:
        db.execute(statement.format(real="REAL"))


def _v9_framework_adapters(db: sqlite_utils.Database) -> None:
    for statement in ADAPTER_SCHEMA:
        db.execute(ddl(statement, postgres=False))


def _v10_deletion_generation(db: sqlite_utils.Database) -> None:
    # Raised by every delete of a turn, whatever deletes it: caches of turns check it.
    db.execute(
        "CREATE TABLE deletions"
        " (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)"
    )
    db.execute("INSERT INTO deletions VALUES (1, 0)")
    db.execute(
        "CREATE TRIGGER responses_deleted AFTER DELETE ON responses BEGIN "
        "UPDATE deletions SET generation = generation + 1 WHERE id = 1; END"
    )


def _v11_instance_heartbeats(db: sqlite_utils.Database) -> None:
    # An unfinished turn names its instance; the instance proves it is alive in its row.
    db.execute("ALTER TABLE responses ADD COLUMN instance_id TEXT")
    db.execute(
        "CREATE INDEX responses_unfinished_instance ON responses (instance_id)"
        " WHERE status IN ('in_progress', 'queued')"
    )
    db.execute("CREATE TABLE instances (id TEXT PRIMARY KEY, beat_at REAL NOT NULL)")


def _v12_usage_records(db: sqlite_utils.Database) -> None:
    # The tokens of upstream calls that no stored turn holds (compactions' summaries).
    db.execute(
        """
        CREATE TABLE usage_records (
            project TEXT NOT NULL,
            model TEXT NOT NULL,
            created_at REAL NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX usage_records_created ON usage_records (created_at)")


def _v13_agent_times_in_milliseconds(db: sqlite_utils.Database) -> None:
    # Conversations list by the time they show (whole milliseconds), then by id.
    db.execute(
        "UPDATE agent_conversations SET"
        " created_at = CAST(created_at * 1000 AS INTEGER) / 1000.0,"
        " updated_at = CAST(updated_at * 1000 AS INTEGER) / 1000.0"
    )


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _v1_responses,
    _v2_conversations,
    _v3_unfinished_index,
    _v4_drop_unread_indexes,
    _v5_keys_and_retention,
    _v6_response_events,
    _v7_secrets,
    _v8_agent_store,
    _v9_framework_adapters,
    _v10_deletion_generation,
    _v11_instance_heartbeats,
    _v12_usage_records,
    _v13_agent_times_in_milliseconds,
]


def migrate(db: sqlite_utils.Database) -> int:
    """Apply the migrations the file has not seen yet; return the resulting version.

    The check and the steps share one ``BEGIN IMMEDIATE`` transaction, so processes
    starting together on one file migrate it exactly once.
    """
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
            step(db)
            conn.execute(f"PRAGMA user_version = {number}")
            version = number
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version
