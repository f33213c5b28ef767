"""Statements on stored turns (``responses``): the row, its chain, and its deletions."""

from __future__ import annotations

from typing import Any

from ..models import StoredResponse
from .dialect import BYTEWISE, Dialect
from .statement import Returning, in_list, rows

COLUMN_NAMES = (
    "project",
    "id",
    "previous_response_id",
    "conversation_id",
    "created_at",
    "completed_at",
    "status",
    "request",
    "response",
    "metadata",
    "instance_id",
    "timeline",
)
COLUMNS = ", ".join(COLUMN_NAMES)
KEY = "project = :project AND id = :id"

SELECT = f"SELECT {COLUMNS} FROM responses WHERE {KEY}"
INSERT = f"INSERT INTO responses ({COLUMNS}) VALUES ({', '.join(f':{n}' for n in COLUMN_NAMES)})"
# PostgreSQL saves without reading first: the conflict reports a taken id.
INSERT_NEW = INSERT + " ON CONFLICT (project, id) DO NOTHING"
UPSERT = (
    INSERT
    + " ON CONFLICT (project, id) DO UPDATE SET "
    + ", ".join(f"{n} = EXCLUDED.{n}" for n in COLUMN_NAMES[2:])
)
DELETE = f"DELETE FROM responses WHERE {KEY}"
INPUT_ITEMS = f"SELECT request -> 'input' FROM responses WHERE {KEY}"
DELETION_GENERATION = "SELECT generation FROM deletions"

# An overwrite writes what a turn became; its id, parent (the policy checks it),
# conversation and creation time stay, and so do the index entries on them.
CHANGING = COLUMN_NAMES[5:]
# SQLite's one overwrite the policy allows, made without reading the row first: of a turn
# stored unfinished under the same parent. Any other save reads the row and checks it.
UPDATE_UNFINISHED = (
    "UPDATE responses SET "
    + ", ".join(f"{name} = :{name}" for name in CHANGING)
    + f" WHERE {KEY} AND previous_response_id IS :previous_response_id"
    " AND status IN ('in_progress', 'queued')"
)


def parent_and_status(dialect: Dialect) -> str:
    """What the save policy reads of a stored turn (locked for the transaction)."""
    return f"SELECT previous_response_id, status FROM responses WHERE {KEY}{dialect.for_update}"


# The walk up a chain, tuned per database; parameters: project, id, and the most turns
# (SQLite: limit; PostgreSQL: max_depth, one less).
# SQLite: UNION drops a row seen before, so a corrupted cycle ends, and LIMIT stops one
# row past the depth limit; the outer join fetches what each turn contributes.
CHAIN_SQLITE = """
WITH RECURSIVE chain(id, parent) AS (
    SELECT id, previous_response_id FROM responses WHERE project = :project AND id = :id
    UNION
    SELECT r.id, r.previous_response_id
    FROM responses r JOIN chain ON r.id = chain.parent
    WHERE r.project = :project
    LIMIT :limit
)
SELECT r.id, r.previous_response_id, r.status,
       coalesce(json_extract(r.request, '$.input'), '[]'),
       coalesce(json_extract(r.response, '$.output'), '[]'),
       json_extract(r.metadata, '$.route')
FROM chain JOIN responses r ON r.project = :project AND r.id = chain.id
"""
# PostgreSQL: depth bounds the walk (a corrupted cycle stops at the limit); the outer
# query fetches each distinct turn once, with only what it contributes.
CHAIN_POSTGRES = """
WITH RECURSIVE chain(id, parent, depth) AS (
    SELECT id, previous_response_id, 1 FROM responses
    WHERE project = :project AND id = :id
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1
    FROM responses r JOIN chain ON r.id = chain.parent
    WHERE r.project = :project AND chain.depth <= :max_depth
)
SELECT r.id, r.previous_response_id, r.status,
       coalesce(r.request -> 'input', '[]'), coalesce(r.response -> 'output', '[]'),
       r.metadata -> 'route'
FROM (SELECT DISTINCT id FROM chain) c
JOIN responses r ON r.project = :project AND r.id = c.id
"""

_CHUNK = 500  # within SQLite's limit of bound parameters


def existing_ids(dialect: Dialect, project: str, ids: list[str]) -> Returning[set[str]]:
    """Which of ``ids`` name stored turns of ``project``."""
    found: set[str] = set()
    if dialect.postgres:  # one array parameter, however many ids
        every = yield rows(_EXISTING_ANY, project=project, ids=ids)
        return {row[0] for row in every}
    for start in range(0, len(ids), _CHUNK):
        marks, params = in_list("id", ids[start : start + _CHUNK])
        chunk = yield rows(
            f"SELECT id FROM responses WHERE project = :project AND id IN ({marks})",
            project=project,
            **params,
        )
        found.update(row[0] for row in chunk)
    return found


_EXISTING_ANY = "SELECT id FROM responses WHERE project = :project AND id = ANY(:ids)"


# Whole turns page by page, oldest first, for ``gateway export``: the order both databases
# agree on (ids compared bytewise, whatever PostgreSQL's collation).
PAGE_ORDER = f" ORDER BY created_at, id {BYTEWISE} LIMIT :limit"
PAGE_AFTER = (
    f" AND (created_at > :created_at OR (created_at = :created_at AND id {BYTEWISE} > :id))"
)
PROJECTS = "SELECT project FROM responses UNION SELECT project FROM conversations"


def page(
    dialect: Dialect, project: str, after: tuple[float, str] | None, limit: int
) -> Returning[list[StoredResponse]]:
    """Up to ``limit`` whole turns of ``project`` after the position ``after``."""
    where = "" if after is None else PAGE_AFTER
    position = {} if after is None else {"created_at": after[0], "id": after[1]}
    found = yield rows(
        f"SELECT {COLUMNS} FROM responses WHERE project = :project{where}{PAGE_ORDER}",
        project=project,
        limit=limit,
        **position,
    )
    return [_record(dialect, row) for row in found]


def _record(dialect: Dialect, row: tuple[Any, ...]) -> StoredResponse:
    values = dict(zip(COLUMN_NAMES, row, strict=True))
    for name in ("request", "response", "metadata"):
        values[name] = dialect.loads(values[name])
    if values["timeline"] is not None:
        values["timeline"] = dialect.loads(values["timeline"])
    return StoredResponse.model_validate(values)


def projects() -> Returning[list[str]]:
    """Every project holding a turn or a conversation, sorted (by code point: bytewise)."""
    found = yield rows(PROJECTS)
    return sorted(row[0] for row in found)
