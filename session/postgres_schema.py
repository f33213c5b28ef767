"""The PostgreSQL schema, created and migrated step by step; safe when instances race."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from .agent_store.calls import SCHEMA as ADAPTER_SCHEMA
from .agent_store.sql import SCHEMA as AGENT_SCHEMA
from .agent_store.sql import ddl

# Arbitrary constant naming the advisory lock that serialises migrations across instances.
MIGRATION_LOCK = 0x6A7E_5E55

MIGRATIONS: list[str] = [
    """
    CREATE TABLE responses (
        project TEXT NOT NULL,
        id TEXT NOT NULL,
        previous_response_id TEXT,
        conversation_id TEXT,
        created_at DOUBLE PRECISION NOT NULL,
        completed_at DOUBLE PRECISION,
        status TEXT NOT NULL,
        request JSONB NOT NULL,
        response JSONB NOT NULL,
        metadata JSONB NOT NULL,
        PRIMARY KEY (project, id)
    );
    CREATE INDEX responses_parent ON responses (project, previous_response_id);
    CREATE INDEX responses_conversation ON responses (project, conversation_id);
    CREATE INDEX responses_created ON responses (project, created_at);
    """,
    """
    CREATE TABLE conversations (
        project TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        metadata JSONB NOT NULL,
        next_seq BIGINT NOT NULL DEFAULT 1,
        PRIMARY KEY (project, id)
    );
    CREATE TABLE conversation_items (
        project TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        id TEXT NOT NULL,
        item JSONB NOT NULL,
        PRIMARY KEY (project, conversation_id, seq),
        UNIQUE (project, conversation_id, id),
        FOREIGN KEY (project, conversation_id)
            REFERENCES conversations (project, id) ON DELETE CASCADE
    );
    """,
    """
    CREATE INDEX responses_unfinished ON responses (created_at)
        WHERE status IN ('in_progress', 'queued');
    """,
    # No query looks turns up by parent or by conversation; every index costs each insert.
    """
    DROP INDEX responses_parent;
    DROP INDEX responses_conversation;
    """,
    # API keys; retention deletes by age across projects, so its indexes lead with time.
    """
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        name TEXT,
        secret_hash TEXT NOT NULL UNIQUE,
        created_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION,
        requests_per_minute INTEGER
    );
    DROP INDEX responses_created;
    CREATE INDEX responses_created ON responses (created_at);
    ALTER TABLE conversations ADD COLUMN updated_at DOUBLE PRECISION;
    UPDATE conversations SET updated_at = created_at;
    CREATE INDEX conversations_updated ON conversations (updated_at);
    """,
    """
    CREATE TABLE response_events (
        project TEXT NOT NULL,
        response_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        event TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (project, response_id, seq)
    );
    CREATE INDEX response_events_created ON response_events (created_at);
    """,
    "CREATE TABLE gateway_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ";\n".join(ddl(statement, postgres=True) for statement in AGENT_SCHEMA),
    ";\n".join(ddl(statement, postgres=True) for statement in ADAPTER_SCHEMA),
    # Raised by every statement that deletes turns, whatever runs it: caches of turns check it.
    """
    CREATE TABLE deletions (id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL);
    INSERT INTO deletions VALUES (1, 0);
    CREATE FUNCTION responses_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM gone) THEN
            UPDATE deletions SET generation = generation + 1 WHERE id = 1;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER responses_deleted AFTER DELETE ON responses
        REFERENCING OLD TABLE AS gone
        FOR EACH STATEMENT EXECUTE FUNCTION responses_deleted();
    """,
    # An unfinished turn names its instance; the instance proves it is alive in its row.
    """
    ALTER TABLE responses ADD COLUMN instance_id TEXT;
    CREATE INDEX responses_unfinished_instance ON responses (instance_id)
        WHERE status IN ('in_progress', 'queued');
    CREATE TABLE instances (id TEXT PRIMARY KEY, beat_at DOUBLE PRECISION NOT NULL);
    """,
    # The tokens of upstream calls that no stored turn holds (compactions' summaries).
    """
    CREATE TABLE usage_records (
        project TEXT NOT NULL,
        model TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        reasoning_tokens BIGINT NOT NULL
    );
    CREATE INDEX usage_records_created ON usage_records (created_at);
    """,
    # Conversations list by the time they show (whole milliseconds), then by id.
    """
    UPDATE agent_conversations SET
        created_at = floor(created_at * 1000) / 1000,
        updated_at = floor(updated_at * 1000) / 1000;
    """,
]


async def migrate(conn: AsyncConnection[Any]) -> int:
    """Apply the migrations this database has not seen; return the resulting version.

    One transaction under an advisory lock: instances starting together wait for the
    first one, then find nothing left to do.
    """
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        cursor = await conn.execute("SELECT version FROM schema_version")
        row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if row is None:
            await conn.execute("INSERT INTO schema_version VALUES (0)")
        for number, step in enumerate(MIGRATIONS[version:], start=version + 1):
            await conn.execute(step)
            await conn.execute("UPDATE schema_version SET version = %s", (number,))
            version = number
    return version
