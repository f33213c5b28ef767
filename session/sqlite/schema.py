"""The SQLite schema: frozen DDL per version, applied in order under ``PRAGMA user_version``.

A version, once released, is never edited: a change to the schema is a new version.
"""

from __future__ import annotations

import sqlite3

# Version 1 is written as sqlite-utils wrote it then, so that files made by it and fresh
# files hold the same schema.
_V1_RESPONSES = (
    'CREATE TABLE "responses" (\n'
    '   "project" TEXT NOT NULL,\n'
    '   "id" TEXT NOT NULL,\n'
    '   "previous_response_id" TEXT,\n'
    '   "conversation_id" TEXT,\n'
    '   "created_at" REAL NOT NULL,\n'
    '   "completed_at" REAL,\n'
    '   "status" TEXT NOT NULL,\n'
    '   "request" TEXT NOT NULL,\n'
    '   "response" TEXT NOT NULL,\n'
    '   "metadata" TEXT NOT NULL,\n'
    '   PRIMARY KEY ("project", "id")\n'
    ")"
)
_V2_CONVERSATIONS = (
    'CREATE TABLE "conversations" (\n'
    '   "project" TEXT NOT NULL,\n'
    '   "id" TEXT NOT NULL,\n'
    '   "created_at" REAL NOT NULL,\n'
    '   "metadata" TEXT NOT NULL,\n'
    '   "next_seq" INTEGER NOT NULL,\n'
    '   PRIMARY KEY ("project", "id")\n'
    ")"
)

MIGRATIONS: list[tuple[str, ...]] = [
    (  # 1: stored turns
        _V1_RESPONSES,
        'CREATE INDEX "idx_responses_project_previous_response_id"\n'
        '    ON "responses" ("project", "previous_response_id")',
        'CREATE INDEX "idx_responses_project_conversation_id"\n'
        '    ON "responses" ("project", "conversation_id")',
        'CREATE INDEX "idx_responses_project_created_at"\n'
        '    ON "responses" ("project", "created_at")',
    ),
    (  # 2: conversations and their items
        _V2_CONVERSATIONS,
        """CREATE TABLE conversation_items (
            project TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            item TEXT NOT NULL,
            PRIMARY KEY (project, conversation_id, seq),
            UNIQUE (project, conversation_id, id),
            FOREIGN KEY (project, conversation_id)
                REFERENCES conversations (project, id) ON DELETE CASCADE
        )""",
    ),
    (  # 3: the sweep of turns left unfinished by a crash reads only these few rows
        "CREATE INDEX responses_unfinished ON responses (created_at)"
        " WHERE status IN ('in_progress', 'queued')",
    ),
    (  # 4: no query looks turns up by parent or by conversation; an index costs each insert
        "DROP INDEX idx_responses_project_previous_response_id",
        "DROP INDEX idx_responses_project_conversation_id",
    ),
    (  # 5: API keys; retention deletes by age across projects: its indexes lead with time
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT,
            secret_hash TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL,
            revoked_at REAL,
            requests_per_minute INTEGER
        )""",
        "DROP INDEX idx_responses_project_created_at",
        "CREATE INDEX responses_created ON responses (created_at)",
        "ALTER TABLE conversations ADD COLUMN updated_at REAL",
        "UPDATE conversations SET updated_at = created_at",
        "CREATE INDEX conversations_updated ON conversations (updated_at)",
    ),
    (  # 6: a streamed response's events, kept for clients that resume
        """CREATE TABLE response_events (
            project TEXT NOT NULL,
            response_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            event TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (project, response_id, seq)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX response_events_created ON response_events (created_at)",
    ),
    ("CREATE TABLE gateway_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",),  # 7
    (  # 8: the agent Store
        """CREATE TABLE agent_conversations (
        project TEXT NOT NULL, id TEXT NOT NULL, metadata TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, next_seq BIGINT NOT NULL,
        PRIMARY KEY (project, id))""",
        "CREATE INDEX agent_conversations_recent ON agent_conversations (project, updated_at, id)",
        """CREATE TABLE agent_messages (
        project TEXT NOT NULL, id TEXT NOT NULL, conversation_id TEXT NOT NULL,
        seq BIGINT NOT NULL, role TEXT, type TEXT, payload TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        PRIMARY KEY (project, id))""",
        "CREATE UNIQUE INDEX agent_messages_order"
        " ON agent_messages (project, conversation_id, seq)",
        """CREATE TABLE agent_state (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (project, conversation_id, key))""",
        """CREATE TABLE agent_bindings (
        project TEXT NOT NULL, conversation_id TEXT NOT NULL, session_id TEXT NOT NULL,
        PRIMARY KEY (project, conversation_id))""",
    ),
    (  # 9: the framework adapters (Claude Agent SDK transcripts, LangGraph)
        """CREATE TABLE claude_transcripts (
        project TEXT NOT NULL, namespace TEXT NOT NULL, project_key TEXT NOT NULL,
        session_id TEXT NOT NULL, subpath TEXT NOT NULL, next_seq BIGINT NOT NULL,
        mtime BIGINT NOT NULL, summary TEXT, summary_mtime BIGINT,
        summary_version BIGINT NOT NULL, summary_seq BIGINT NOT NULL,
        PRIMARY KEY (project, namespace, project_key, session_id, subpath))""",
        """CREATE TABLE claude_entries (
        project TEXT NOT NULL, namespace TEXT NOT NULL, project_key TEXT NOT NULL,
        session_id TEXT NOT NULL, subpath TEXT NOT NULL, seq BIGINT NOT NULL, uuid TEXT,
        entry TEXT NOT NULL,
        PRIMARY KEY (project, namespace, project_key, session_id, subpath, seq))""",
        """CREATE INDEX claude_entries_uuid
        ON claude_entries (project, namespace, project_key, session_id, subpath, uuid)""",
        """CREATE TABLE lg_checkpoints (
        project TEXT NOT NULL, namespace TEXT NOT NULL, thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT,
        run_id TEXT, checkpoint TEXT NOT NULL, metadata TEXT NOT NULL, filter TEXT NOT NULL,
        PRIMARY KEY (project, namespace, thread_id, checkpoint_ns, checkpoint_id))""",
        "CREATE INDEX lg_checkpoints_run ON lg_checkpoints (project, namespace, run_id)",
        """CREATE TABLE lg_writes (
        project TEXT NOT NULL, namespace TEXT NOT NULL, thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
        idx BIGINT NOT NULL, channel TEXT NOT NULL, task_path TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (project, namespace, thread_id, checkpoint_ns, checkpoint_id, task_id, idx))""",
        """CREATE TABLE lg_items (
        project TEXT NOT NULL, namespace TEXT NOT NULL, path TEXT NOT NULL,
        key TEXT NOT NULL, value TEXT NOT NULL, created_at REAL NOT NULL,
        updated_at REAL NOT NULL, PRIMARY KEY (project, namespace, path, key))""",
    ),
    (  # 10: raised by every delete of a turn, whatever deletes it: caches of turns check it
        "CREATE TABLE deletions"
        " (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)",
        "INSERT INTO deletions VALUES (1, 0)",
        "CREATE TRIGGER responses_deleted AFTER DELETE ON responses BEGIN "
        "UPDATE deletions SET generation = generation + 1 WHERE id = 1; END",
    ),
    (  # 11: an unfinished turn names its instance; the instance proves it is alive in its row
        "ALTER TABLE responses ADD COLUMN instance_id TEXT",
        "CREATE INDEX responses_unfinished_instance ON responses (instance_id)"
        " WHERE status IN ('in_progress', 'queued')",
        "CREATE TABLE instances (id TEXT PRIMARY KEY, beat_at REAL NOT NULL)",
    ),
    (  # 12: the tokens of upstream calls that no stored turn holds (compactions' summaries)
        """CREATE TABLE usage_records (
            project TEXT NOT NULL,
            model TEXT NOT NULL,
            created_at REAL NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL
        )""",
        "CREATE INDEX usage_records_created ON usage_records (created_at)",
    ),
    (  # 13: agent conversations list by the time they show (whole milliseconds), then by id
        "UPDATE agent_conversations SET"
        " created_at = CAST(created_at * 1000 AS INTEGER) / 1000.0,"
        " updated_at = CAST(updated_at * 1000 AS INTEGER) / 1000.0",
    ),
    (  # 14: the console lists a turn's children (its branches)
        "CREATE INDEX responses_children ON responses (project, previous_response_id)"
        " WHERE previous_response_id IS NOT NULL",
    ),
    (  # 15: limits every instance shares; a managed key's monthly budget
        "CREATE TABLE gateway_buckets"
        " (name TEXT PRIMARY KEY, tokens REAL NOT NULL, updated_at REAL NOT NULL)",
        "CREATE TABLE gateway_counters (name TEXT PRIMARY KEY, value REAL NOT NULL)",
        "CREATE TABLE gateway_cooldowns"
        " (name TEXT PRIMARY KEY, ends_at REAL NOT NULL, error TEXT NOT NULL)",
        "ALTER TABLE api_keys ADD COLUMN budget_usd REAL",
    ),
    (  # 16: the console finds a turn by the request id that made it
        "CREATE INDEX responses_request_id ON responses (json_extract(metadata, '$.request_id'))"
        " WHERE json_extract(metadata, '$.request_id') IS NOT NULL",
    ),
    (  # 17: a managed key's monthly budget in tokens
        "ALTER TABLE api_keys ADD COLUMN budget_tokens INTEGER",
    ),
    (  # 18: the figures of turns sent with store: false (never what they said), for usage
        """CREATE TABLE unstored_turns (
            project TEXT NOT NULL,
            model TEXT NOT NULL,
            created_at REAL NOT NULL,
            completed_at REAL,
            key_id TEXT,
            provider TEXT NOT NULL,
            deployment TEXT,
            status TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL,
            cost_usd REAL,
            cost_source TEXT,
            time_to_first_token REAL
        )""",
        "CREATE INDEX unstored_turns_created ON unstored_turns (created_at)",
    ),
    (  # 19: routing affinity: where a prompt_cache_key's or a conversation's turns go
        "CREATE TABLE gateway_affinity"
        " (name TEXT PRIMARY KEY, target TEXT NOT NULL, expires_at REAL NOT NULL)",
        "CREATE INDEX gateway_affinity_expires ON gateway_affinity (expires_at)",
    ),
    (  # 20: the steps a turn took, with their times, for the console's timeline
        "ALTER TABLE responses ADD COLUMN timeline TEXT",
    ),
    (  # 21: files, vector stores, their chunks with vectors and full-text search
        """CREATE TABLE files (
            project TEXT NOT NULL,
            id TEXT NOT NULL PRIMARY KEY,
            filename TEXT NOT NULL,
            purpose TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            created_at REAL NOT NULL,
            expires_at REAL
        )""",
        "CREATE INDEX files_project ON files (project, created_at)",
        "CREATE TABLE file_contents (id TEXT NOT NULL PRIMARY KEY, content BLOB NOT NULL)",
        """CREATE TABLE vector_stores (
            project TEXT NOT NULL,
            id TEXT NOT NULL PRIMARY KEY,
            name TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_active_at REAL NOT NULL,
            metadata TEXT NOT NULL,
            expires_after TEXT
        )""",
        "CREATE INDEX vector_stores_project ON vector_stores (project, created_at)",
        """CREATE TABLE vector_store_files (
            store_id TEXT NOT NULL,
            file_id TEXT NOT NULL,
            project TEXT NOT NULL,
            created_at REAL NOT NULL,
            status TEXT NOT NULL,
            last_error TEXT,
            attributes TEXT NOT NULL,
            chunking TEXT NOT NULL,
            usage_bytes INTEGER NOT NULL,
            batch_id TEXT,
            PRIMARY KEY (store_id, file_id)
        )""",
        "CREATE INDEX vector_store_files_file ON vector_store_files (file_id)",
        """CREATE TABLE file_batches (
            id TEXT NOT NULL PRIMARY KEY,
            store_id TEXT NOT NULL,
            project TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            store_id TEXT NOT NULL,
            file_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            text TEXT NOT NULL,
            vector BLOB NOT NULL
        )""",
        "CREATE INDEX chunks_file ON chunks (store_id, file_id)",
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, store_id UNINDEXED)",
    ),
    (  # 22: LangGraph store items' vectors (float32, unit length), one per indexed field
        """CREATE TABLE lg_item_vectors (
        project TEXT NOT NULL, namespace TEXT NOT NULL, path TEXT NOT NULL,
        key TEXT NOT NULL, field TEXT NOT NULL, vector BLOB NOT NULL,
        PRIMARY KEY (project, namespace, path, key, field))""",
    ),
]


def migrate(conn: sqlite3.Connection, *, up_to: int | None = None) -> int:
    """Apply the versions the file has not seen yet (to ``up_to``, else all); return the
    version it is at.

    The check and the steps share one ``BEGIN IMMEDIATE`` transaction, so processes
    starting together on one file migrate it exactly once.
    """
    target = len(MIGRATIONS) if up_to is None else up_to
    conn.execute("BEGIN IMMEDIATE")
    try:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version + 1, target + 1):
            for statement in MIGRATIONS[number - 1]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            version = number
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version
