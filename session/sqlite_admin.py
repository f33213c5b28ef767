"""API keys, retention, usage and stream-event statements for the SQLite backend."""

from __future__ import annotations

import sqlite3
import time

from .errors import KeyNotFound
from .keys import KEY_COLUMNS, ApiKey, key_from_row
from .usage import SQLITE as USAGE
from .usage import Pruned, UsageRecord, UsageRow, usage_row


def insert_key(conn: sqlite3.Connection, key: ApiKey) -> None:
    conn.execute(
        f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        tuple(key.model_dump().values()),
    )


def find_key(conn: sqlite3.Connection, secret_hash: str) -> ApiKey | None:
    row = conn.execute(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = ?", (secret_hash,)
    ).fetchone()
    return None if row is None else key_from_row(row)


def list_keys(conn: sqlite3.Connection, project: str | None) -> list[ApiKey]:
    rows = conn.execute(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE ? IS NULL OR project = ?"
        " ORDER BY created_at, id",
        (project, project),
    ).fetchall()
    return [key_from_row(row) for row in rows]


def revoke_key(conn: sqlite3.Connection, key_id: str, now: float) -> ApiKey:
    conn.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, key_id)
    )
    row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?", (key_id,)).fetchone()
    if row is None:
        raise KeyNotFound(key_id)
    return key_from_row(row)


def prune(conn: sqlite3.Connection, before: float, limit: int) -> Pruned:
    """Delete up to ``limit`` turns and ``limit`` conversations last active before ``before``."""
    responses = conn.execute(
        "DELETE FROM responses WHERE rowid IN"
        " (SELECT rowid FROM responses WHERE created_at < ? LIMIT ?)",
        (before, limit),
    ).rowcount
    conversations = conn.execute(
        "DELETE FROM conversations WHERE rowid IN"
        " (SELECT rowid FROM conversations WHERE updated_at < ? LIMIT ?)",
        (before, limit),
    ).rowcount
    conn.execute(
        "DELETE FROM usage_records WHERE rowid IN"
        " (SELECT rowid FROM usage_records WHERE created_at < ? LIMIT ?)",
        (before, limit),
    )
    return Pruned(responses, conversations)


def record_usage(conn: sqlite3.Connection, record: UsageRecord) -> None:
    conn.execute(USAGE.insert, (record.project, record.model, record.created_at, *record.tokens))


def usage(conn: sqlite3.Connection, project: str | None, since: float) -> list[UsageRow]:
    rows = conn.execute(
        f"""
        SELECT project, model, sum(n), sum(i), sum(o), sum(c), sum(r) FROM (
            SELECT project, json_extract(request, '$.model') AS model, 1 AS n,
                   json_extract(response, '$.usage.input_tokens') AS i,
                   json_extract(response, '$.usage.output_tokens') AS o,
                   json_extract(response, '$.usage.input_tokens_details.cached_tokens') AS c,
                   json_extract(response, '$.usage.output_tokens_details.reasoning_tokens') AS r
            FROM responses WHERE created_at >= ? AND (? IS NULL OR project = ?)
            UNION ALL {USAGE.totals}
        ) GROUP BY 1, 2 ORDER BY 1, 2
        """,
        (since, project, project) * 2,
    ).fetchall()
    return [usage_row(*row) for row in rows]


def append_events(
    conn: sqlite3.Connection, project: str, response_id: str, events: list[tuple[int, str]]
) -> None:
    now = time.time()
    conn.executemany(
        "INSERT OR IGNORE INTO response_events (project, response_id, seq, event, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(project, response_id, seq, event, now) for seq, event in events],
    )


def events_after(
    conn: sqlite3.Connection, project: str, response_id: str, after: int, limit: int
) -> list[tuple[int, str]]:
    rows = conn.execute(
        "SELECT seq, event FROM response_events WHERE project = ? AND response_id = ?"
        " AND seq > ? ORDER BY seq LIMIT ?",
        (project, response_id, after, limit),
    ).fetchall()
    return [(seq, event) for seq, event in rows]


def prune_events(conn: sqlite3.Connection, before: float) -> int:
    return conn.execute(
        "DELETE FROM response_events WHERE created_at < ? AND NOT EXISTS ("
        " SELECT 1 FROM responses r WHERE r.project = response_events.project"
        " AND r.id = response_events.response_id AND r.status IN ('queued', 'in_progress'))",
        (before,),
    ).rowcount


def shared_secret(conn: sqlite3.Connection, name: str, candidate: str) -> str:
    conn.execute(
        "INSERT OR IGNORE INTO gateway_secrets (name, value) VALUES (?, ?)", (name, candidate)
    )
    value: str = conn.execute(
        "SELECT value FROM gateway_secrets WHERE name = ?", (name,)
    ).fetchone()[0]
    return value
