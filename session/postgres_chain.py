"""The reads chain resolution makes on PostgreSQL, each on a connection the caller holds."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from .models import ChainTurn

# One statement. Depth bounds the walk (a corrupted cycle stops at the limit); the outer
# query fetches each distinct turn once, with only what it contributes.
_CHAIN_SQL = """
WITH RECURSIVE chain(id, parent, depth) AS (
    SELECT id, previous_response_id, 1 FROM responses
    WHERE project = %(project)s AND id = %(id)s
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1
    FROM responses r JOIN chain ON r.id = chain.parent
    WHERE r.project = %(project)s AND chain.depth <= %(max_depth)s
)
SELECT r.id, r.previous_response_id, r.status,
       coalesce(r.request -> 'input', '[]'), coalesce(r.response -> 'output', '[]')
FROM (SELECT DISTINCT id FROM chain) c
JOIN responses r ON r.project = %(project)s AND r.id = c.id
"""


async def deletion_generation(conn: AsyncConnection[Any]) -> int:
    """The number every delete of turns raises (see :mod:`session.turn_cache`)."""
    cursor = await conn.execute("SELECT generation FROM deletions")
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def existing_ids(conn: AsyncConnection[Any], project: str, ids: list[str]) -> set[str]:
    cursor = await conn.execute(
        "SELECT id FROM responses WHERE project = %s AND id = ANY(%s)", (project, ids)
    )
    return {row[0] for row in await cursor.fetchall()}


async def chain_turns(
    conn: AsyncConnection[Any], project: str, head: str, limit: int
) -> list[ChainTurn]:
    """Up to ``limit`` turns of the chain that ends at ``head``, in no particular order."""
    params = {"project": project, "id": head, "max_depth": limit - 1}
    cursor = await conn.execute(_CHAIN_SQL, params)
    return [ChainTurn(row[0], row[1], row[2], row[3], row[4]) for row in await cursor.fetchall()]
