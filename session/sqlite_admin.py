"""API keys, retention and usage statements for the SQLite backend."""

from __future__ import annotations

import sqlite3

from .errors import KeyNotFound
from .keys import KEY_COLUMNS, ApiKey, key_from_row
from .usage import Pruned, UsageRow, usage_row


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
    return Pruned(responses, conversations)


def usage(conn: sqlite3.Connection, project: str | None, since: float) -> list[UsageRow]:
    rows = conn.execute(
        """
        SELECT project, json_extract(request, '$.model'), count(*),
               sum(json_extract(response, '$.usage.input_tokens')),
               sum(json_extract(response, '$.usage.output_tokens')),
               sum(json_extract(response, '$.usage.input_tokens_details.cached_tokens')),
               sum(json_extract(response, '$.usage.output_tokens_details.reasoning_tokens'))
        FROM responses WHERE created_at >= ? AND (? IS NULL OR project = ?)
        GROUP BY 1, 2 ORDER BY 1, 2
        """,
        (since, project, project),
    ).fetchall()
    return [usage_row(*row) for row in rows]
