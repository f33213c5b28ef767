"""The PostgreSQL schema: frozen DDL per version, applied in order; safe when instances race.

A version, once released, is never edited: a change to the schema is a new version.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

# Arbitrary constant naming the advisory lock that serialises migrations across instances.
MIGRATION_LOCK = 0x6A7E_5E55

# pgvector's column for each chunk's embedding, where the server has the extension (made
# in ``public`` when it is new there, and left out when this user may not make it). Frozen
# as the migration below; the store runs it again at each start, so a database whose
# server is given pgvector later gets its column then.
ENABLE_PGVECTOR = """
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')
        AND EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN
                CREATE EXTENSION vector SCHEMA public;
            ELSE
                CREATE EXTENSION vector;
            END IF;
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        EXECUTE format(
            'ALTER TABLE chunks ADD COLUMN IF NOT EXISTS embedding %I.vector',
            (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
             WHERE e.extname = 'vector')
        );
    END IF;
END $$;
"""

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
    # The agent Store.
    """
    CREATE TABLE agent_conversations (
        project TEXT NOT NULL, id TEXT NOT NULL, metadata TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
        next_seq BIGINT NOT NULL,
        PRIMARY KEY (project, id));
    CREATE INDEX agent_conversations_recent ON agent_conversations (project, updated_at, id);
    CREATE TABLE agent_messages (
        project TEXT NOT NULL, id TEXT NOT NULL, conversation_id TEXT NOT NULL,
        seq BIGINT NOT NULL, role TEXT, type TEXT, payload TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (project, id));
    CREATE UNIQUE INDEX agent_messages_order ON agent_messages (project, conversation_id, seq);
    CREATE TABLE agent_state (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (project, conversation_id, key));
    CREATE TABLE agent_bindings (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, session_id TEXT NOT NULL,
        PRIMARY KEY (project, conversation_id))
    """,
    # The framework adapters; checkpoint ids and item paths sort bytewise.
    """
    CREATE TABLE claude_transcripts (
        project TEXT NOT NULL, namespace TEXT NOT NULL, project_key TEXT NOT NULL,
        session_id TEXT NOT NULL, subpath TEXT NOT NULL, next_seq BIGINT NOT NULL,
        mtime BIGINT NOT NULL, summary TEXT, summary_mtime BIGINT,
        summary_version BIGINT NOT NULL, summary_seq BIGINT NOT NULL,
        PRIMARY KEY (project, namespace, project_key, session_id, subpath));
    CREATE TABLE claude_entries (
        project TEXT NOT NULL, namespace TEXT NOT NULL, project_key TEXT NOT NULL,
        session_id TEXT NOT NULL, subpath TEXT NOT NULL, seq BIGINT NOT NULL, uuid TEXT,
        entry TEXT NOT NULL,
        PRIMARY KEY (project, namespace, project_key, session_id, subpath, seq));
    CREATE INDEX claude_entries_uuid
        ON claude_entries (project, namespace, project_key, session_id, subpath, uuid);
    CREATE TABLE lg_checkpoints (
        project TEXT NOT NULL, namespace TEXT NOT NULL, thread_id TEXT COLLATE "C" NOT NULL,
        checkpoint_ns TEXT COLLATE "C" NOT NULL, checkpoint_id TEXT COLLATE "C" NOT NULL,
        parent_id TEXT, run_id TEXT, checkpoint TEXT NOT NULL, metadata TEXT NOT NULL,
        filter TEXT NOT NULL,
        PRIMARY KEY (project, namespace, thread_id, checkpoint_ns, checkpoint_id));
    CREATE INDEX lg_checkpoints_run ON lg_checkpoints (project, namespace, run_id);
    CREATE TABLE lg_writes (
        project TEXT NOT NULL, namespace TEXT NOT NULL, thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
        idx BIGINT NOT NULL, channel TEXT NOT NULL, task_path TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (project, namespace, thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
    CREATE TABLE lg_items (
        project TEXT NOT NULL, namespace TEXT NOT NULL, path TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL, value TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (project, namespace, path, key))
    """,
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
    # The console lists a turn's children (its branches).
    """
    CREATE INDEX responses_children ON responses (project, previous_response_id)
        WHERE previous_response_id IS NOT NULL;
    """,
    # Limits every instance shares; a managed key's monthly budget.
    """
    CREATE TABLE gateway_buckets (
        name TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE gateway_counters (name TEXT PRIMARY KEY, value DOUBLE PRECISION NOT NULL);
    CREATE TABLE gateway_cooldowns (
        name TEXT PRIMARY KEY,
        ends_at DOUBLE PRECISION NOT NULL,
        error TEXT NOT NULL
    );
    ALTER TABLE api_keys ADD COLUMN budget_usd DOUBLE PRECISION;
    """,
    # The console finds a turn by the request id that made it.
    """
    CREATE INDEX responses_request_id ON responses ((metadata #>> '{request_id}'))
        WHERE metadata #>> '{request_id}' IS NOT NULL;
    """,
    # A managed key's monthly budget in tokens.
    "ALTER TABLE api_keys ADD COLUMN budget_tokens BIGINT;",
    # The figures of turns sent with store: false (never what they said), for usage.
    """
    CREATE TABLE unstored_turns (
        project TEXT NOT NULL,
        model TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        completed_at DOUBLE PRECISION,
        key_id TEXT,
        provider TEXT NOT NULL,
        deployment TEXT,
        status TEXT NOT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cached_tokens BIGINT NOT NULL,
        reasoning_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION,
        cost_source TEXT,
        time_to_first_token DOUBLE PRECISION
    );
    CREATE INDEX unstored_turns_created ON unstored_turns (created_at);
    """,
    # routing affinity: where a prompt_cache_key's or a conversation's turns go
    """
    CREATE TABLE gateway_affinity (
        name TEXT PRIMARY KEY,
        target TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX gateway_affinity_expires ON gateway_affinity (expires_at);
    """,
    # The steps a turn took, with their times, for the console's timeline.
    "ALTER TABLE responses ADD COLUMN timeline JSONB;",
    # Files, vector stores, their chunks with vectors and full-text search.
    """
    CREATE TABLE files (
        project TEXT NOT NULL,
        id TEXT NOT NULL PRIMARY KEY,
        filename TEXT NOT NULL,
        purpose TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION
    );
    CREATE INDEX files_project ON files (project, created_at);
    CREATE TABLE file_contents (id TEXT NOT NULL PRIMARY KEY, content BYTEA NOT NULL);
    CREATE TABLE vector_stores (
        project TEXT NOT NULL,
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        last_active_at DOUBLE PRECISION NOT NULL,
        metadata TEXT NOT NULL,
        expires_after TEXT
    );
    CREATE INDEX vector_stores_project ON vector_stores (project, created_at);
    CREATE TABLE vector_store_files (
        store_id TEXT NOT NULL,
        file_id TEXT NOT NULL,
        project TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        status TEXT NOT NULL,
        last_error TEXT,
        attributes TEXT NOT NULL,
        chunking TEXT NOT NULL,
        usage_bytes BIGINT NOT NULL,
        batch_id TEXT,
        PRIMARY KEY (store_id, file_id)
    );
    CREATE INDEX vector_store_files_file ON vector_store_files (file_id);
    CREATE TABLE file_batches (
        id TEXT NOT NULL PRIMARY KEY,
        store_id TEXT NOT NULL,
        project TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE chunks (
        id BIGSERIAL PRIMARY KEY,
        store_id TEXT NOT NULL,
        file_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        vector BYTEA NOT NULL,
        words TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
    );
    CREATE INDEX chunks_file ON chunks (store_id, file_id);
    CREATE INDEX chunks_words ON chunks USING GIN (words);
    """,
    # LangGraph store items' vectors (float32, unit length), one per indexed field.
    """
    CREATE TABLE lg_item_vectors (
        project TEXT NOT NULL, namespace TEXT NOT NULL, path TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL, field TEXT NOT NULL, vector BYTEA NOT NULL,
        PRIMARY KEY (project, namespace, path, key, field))
    """,
    # The vector index: pgvector's column for each chunk's embedding (its HNSW indexes are
    # made by the first file of each length of vector), where the server has pgvector.
    ENABLE_PGVECTOR,
]


async def migrate(conn: AsyncConnection[Any], *, up_to: int | None = None) -> int:
    """Apply the versions this database has not seen (to ``up_to``, else all); return the
    version it is at.

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
        target = len(MIGRATIONS) if up_to is None else up_to
        for number in range(version + 1, target + 1):
            await conn.execute(MIGRATIONS[number - 1])
            await conn.execute("UPDATE schema_version SET version = %s", (number,))
            version = number
    return version
