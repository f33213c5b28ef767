"""Statements that look into stored turns: a page of a chain's ancestors, a turn's
children, recent turns by filter, and the samples usage totals are made of."""

from __future__ import annotations

from typing import Any

from ..browse import TurnQuery, UsageSample
from ..models import StoredResponse
from ..usage import token_counts
from .dialect import BYTEWISE, Dialect
from .responses import COLUMNS, _record
from .statement import Returning, rows

_PREFIXED = ", ".join(f"r.{name}" for name in COLUMNS.split(", "))

# The turn and up to ``last`` of its ancestors, newest first; depth bounds the walk, so a
# corrupted cycle stops at the limit.
ANCESTORS = f"""
WITH RECURSIVE chain(id, parent, depth) AS (
    SELECT id, previous_response_id, 0 FROM responses WHERE project = :project AND id = :id
    UNION ALL
    SELECT r.id, r.previous_response_id, chain.depth + 1
    FROM responses r JOIN chain ON r.id = chain.parent
    WHERE r.project = :project AND chain.depth < :last
)
SELECT {_PREFIXED} FROM chain JOIN responses r ON r.project = :project AND r.id = chain.id
ORDER BY chain.depth
"""

CHILDREN = (
    f"SELECT {COLUMNS} FROM responses WHERE project = :project"
    f" AND previous_response_id = :id ORDER BY created_at, id {BYTEWISE} LIMIT :limit"
)


def ancestors(
    dialect: Dialect, project: str, response_id: str, limit: int
) -> Returning[list[StoredResponse]]:
    """``response_id`` and up to ``limit - 1`` of its ancestors, newest first."""
    found = yield rows(ANCESTORS, project=project, id=response_id, last=limit - 1)
    return [_record(dialect, row) for row in found]


def children(
    dialect: Dialect, project: str, response_id: str, limit: int
) -> Returning[list[StoredResponse]]:
    """Up to ``limit`` turns continuing ``response_id``, oldest first."""
    found = yield rows(CHILDREN, project=project, id=response_id, limit=limit)
    return [_record(dialect, row) for row in found]


def find(dialect: Dialect, query: TurnQuery, limit: int) -> Returning[list[StoredResponse]]:
    """Up to ``limit`` turns passing ``query``, newest first (ties: id descending)."""
    where: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    for name, column in (
        ("project", "project"),
        ("model", dialect.json_text("request", "model")),
        ("status", "status"),
        ("key_id", dialect.json_text("metadata", "key_id")),
        ("request_id", dialect.json_text("metadata", "request_id")),
    ):
        value = getattr(query, name)
        if value is not None:
            where.append(f"{column} = :{name}")
            params[name] = value
    if query.since is not None:
        where.append("created_at >= :since")
        params["since"] = query.since
    if query.until is not None:
        where.append("created_at < :until")
        params["until"] = query.until
    if query.before is not None:
        where.append(
            f"(created_at < :before_at OR (created_at = :before_at AND id {BYTEWISE} < :before_id))"
        )
        params["before_at"], params["before_id"] = query.before
    condition = " AND ".join(where) or "TRUE"
    found = yield rows(
        f"SELECT {COLUMNS} FROM responses WHERE {condition}"
        f" ORDER BY created_at DESC, id {BYTEWISE} DESC LIMIT :limit",
        **params,
    )
    return [_record(dialect, row) for row in found]


def usage_samples(
    dialect: Dialect, project: str | None, since: float, until: float
) -> Returning[list[UsageSample]]:
    """The samples of the turns (stored or not), and of the calls in the usage ledger, in
    ``[since, until)``."""
    scope = (
        "created_at >= :since AND created_at < :until"
        " AND (CAST(:project AS TEXT) IS NULL OR project = :project)"
    )
    found = yield rows(
        f"SELECT created_at, completed_at, project, {dialect.json_text('request', 'model')},"
        f" {dialect.json_text('metadata', 'key_id')}, status,"
        f" {_json_value(dialect, 'response', 'usage')},"
        f" {dialect.json_real('metadata', 'cost_usd')}"
        f" FROM responses WHERE {scope}",
        since=since,
        until=until,
        project=project,
    )
    samples = []
    for created, completed, owner, model, key_id, status, usage, cost in found:
        usage = dialect.loads(usage) if isinstance(usage, str) and not dialect.postgres else usage
        latency = None if completed is None else max(0.0, completed - created)
        samples.append(
            UsageSample(
                created,
                owner,
                model,
                key_id,
                status,
                latency,
                token_counts(usage if isinstance(usage, dict) else None),
                float(cost or 0.0),
            )
        )
    ledger = yield rows(
        "SELECT created_at, project, model, input_tokens, output_tokens, cached_tokens,"
        f" reasoning_tokens FROM usage_records WHERE {scope}",
        since=since,
        until=until,
        project=project,
    )
    for created, owner, model, *tokens in ledger:
        counts = (int(tokens[0]), int(tokens[1]), int(tokens[2]), int(tokens[3]))
        samples.append(UsageSample(created, owner, model, None, None, None, counts, 0.0, False))
    unstored = yield rows(
        "SELECT created_at, completed_at, project, model, key_id, status, input_tokens,"
        f" output_tokens, cached_tokens, reasoning_tokens, cost_usd FROM unstored_turns"
        f" WHERE {scope}",
        since=since,
        until=until,
        project=project,
    )
    for created, completed, owner, model, key_id, status, *tokens, cost in unstored:
        latency = None if completed is None else max(0.0, completed - created)
        counts = (int(tokens[0]), int(tokens[1]), int(tokens[2]), int(tokens[3]))
        sample = UsageSample(created, owner, model, key_id, status, latency, counts, cost or 0.0)
        samples.append(sample)
    return samples


def _json_value(dialect: Dialect, column: str, key: str) -> str:
    """The JSON value under ``key`` (an object: JSONB in PostgreSQL, text in SQLite)."""
    if dialect.postgres:
        return f"{column} -> '{key}'"
    return f"json_extract({column}, '$.{key}')"
