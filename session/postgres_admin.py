"""API keys, retention, usage and stream-event statements for the PostgreSQL backend."""

from __future__ import annotations

import time
from typing import Any

from psycopg import AsyncConnection

from .errors import KeyNotFound
from .keys import KEY_COLUMNS, ApiKey, key_from_row
from .usage import POSTGRES as USAGE
from .usage import Pruned, UsageRecord, UsageRow, usage_row

Connection = AsyncConnection[tuple[Any, ...]]


async def insert_key(conn: Connection, key: ApiKey) -> None:
    await conn.execute(
        f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        tuple(key.model_dump().values()),
    )


async def find_key(conn: Connection, secret_hash: str) -> ApiKey | None:
    cursor = await conn.execute(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_hash = %s", (secret_hash,)
    )
    row = await cursor.fetchone()
    return None if row is None else key_from_row(row)


async def list_keys(conn: Connection, project: str | None) -> list[ApiKey]:
    cursor = await conn.execute(
        f"SELECT {KEY_COLUMNS} FROM api_keys WHERE %s::text IS NULL OR project = %s"
        " ORDER BY created_at, id",
        (project, project),
    )
    return [key_from_row(row) for row in await cursor.fetchall()]


async def revoke_key(conn: Connection, key_id: str, now: float) -> ApiKey:
    await conn.execute(
        "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (now, key_id)
    )
    cursor = await conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %s", (key_id,))
    row = await cursor.fetchone()
    if row is None:
        raise KeyNotFound(key_id)
    return key_from_row(row)


async def prune(conn: Connection, before: float, limit: int) -> Pruned:
    """Delete up to ``limit`` turns and ``limit`` conversations last active before ``before``.

    Rows another instance is deleting right now are skipped, not waited for: each row is
    deleted, and counted, by one instance.
    """
    responses = await conn.execute(
        "DELETE FROM responses WHERE ctid IN (SELECT ctid FROM responses WHERE created_at < %s"
        " LIMIT %s FOR UPDATE SKIP LOCKED)",
        (before, limit),
    )
    conversations = await conn.execute(
        "DELETE FROM conversations WHERE ctid IN (SELECT ctid FROM conversations"
        " WHERE updated_at < %s LIMIT %s FOR UPDATE SKIP LOCKED)",
        (before, limit),
    )
    await conn.execute(
        "DELETE FROM usage_records WHERE ctid IN (SELECT ctid FROM usage_records"
        " WHERE created_at < %s LIMIT %s FOR UPDATE SKIP LOCKED)",
        (before, limit),
    )
    return Pruned(responses.rowcount, conversations.rowcount)


async def record_usage(conn: Connection, record: UsageRecord) -> None:
    await conn.execute(
        USAGE.insert, (record.project, record.model, record.created_at, *record.tokens)
    )


async def usage(conn: Connection, project: str | None, since: float) -> list[UsageRow]:
    cursor = await conn.execute(
        """
        SELECT project, model, sum(n), sum(i), sum(o), sum(c), sum(r)
        FROM (
            SELECT project, request ->> 'model' AS model, 1 AS n,
                   (response #>> '{usage,input_tokens}')::bigint AS i,
                   (response #>> '{usage,output_tokens}')::bigint AS o,
                   (response #>> '{usage,input_tokens_details,cached_tokens}')::bigint AS c,
                   (response #>> '{usage,output_tokens_details,reasoning_tokens}')::bigint AS r
            FROM responses WHERE created_at >= %s AND (%s::text IS NULL OR project = %s)
            UNION ALL """
        + USAGE.totals
        + """
        ) AS turns_and_ledger GROUP BY 1, 2 ORDER BY 1, 2
        """,
        (since, project, project) * 2,
    )
    return [usage_row(*row) for row in await cursor.fetchall()]


async def append_events(
    conn: Connection, project: str, response_id: str, events: list[tuple[int, str]]
) -> None:
    now = time.time()
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "INSERT INTO response_events (project, response_id, seq, event, created_at)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(project, response_id, seq, event, now) for seq, event in events],
        )


async def events_after(
    conn: Connection, project: str, response_id: str, after: int, limit: int
) -> list[tuple[int, str]]:
    cursor = await conn.execute(
        "SELECT seq, event FROM response_events WHERE project = %s AND response_id = %s"
        " AND seq > %s ORDER BY seq LIMIT %s",
        (project, response_id, after, limit),
    )
    return [(int(seq), event) for seq, event in await cursor.fetchall()]


async def prune_events(conn: Connection, before: float) -> int:
    cursor = await conn.execute(
        "DELETE FROM response_events e WHERE e.created_at < %s AND NOT EXISTS ("
        " SELECT 1 FROM responses r WHERE r.project = e.project AND r.id = e.response_id"
        " AND r.status IN ('queued', 'in_progress'))",
        (before,),
    )
    return cursor.rowcount


async def shared_secret(conn: Connection, name: str, candidate: str) -> str:
    await conn.execute(
        "INSERT INTO gateway_secrets (name, value) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (name, candidate),
    )
    cursor = await conn.execute("SELECT value FROM gateway_secrets WHERE name = %s", (name,))
    row = await cursor.fetchone()
    assert row is not None
    return str(row[0])
