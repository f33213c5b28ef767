"""Token usage and retention, as operations."""

from __future__ import annotations

from ..usage import Pruned, UnstoredTurn, UsageRecord, UsageRow, usage_row
from .dialect import Dialect
from .statement import Returning, rows, run


def record_usage(record: UsageRecord) -> Returning[None]:
    """Keep the tokens of an upstream call that no stored turn holds."""
    input_tokens, output_tokens, cached_tokens, reasoning_tokens = record.tokens
    yield run(
        "INSERT INTO usage_records (project, model, created_at, input_tokens, output_tokens,"
        " cached_tokens, reasoning_tokens) VALUES (:project, :model, :created_at,"
        " :input_tokens, :output_tokens, :cached_tokens, :reasoning_tokens)",
        project=record.project,
        model=record.model,
        created_at=record.created_at,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        reasoning_tokens=reasoning_tokens,
    )


def record_unstored(turn: UnstoredTurn) -> Returning[None]:
    """Keep the figures of a turn sent with ``store: false``."""
    input_tokens, output_tokens, cached_tokens, reasoning_tokens = turn.tokens
    yield run(
        "INSERT INTO unstored_turns (project, model, created_at, completed_at, key_id,"
        " provider, deployment, status, input_tokens, output_tokens, cached_tokens,"
        " reasoning_tokens, cost_usd, cost_source, time_to_first_token) VALUES (:project,"
        " :model, :created_at, :completed_at, :key_id, :provider, :deployment, :status,"
        " :input_tokens, :output_tokens, :cached_tokens, :reasoning_tokens, :cost_usd,"
        " :cost_source, :time_to_first_token)",
        project=turn.project,
        model=turn.model,
        created_at=turn.created_at,
        completed_at=turn.completed_at,
        key_id=turn.key_id,
        provider=turn.provider,
        deployment=turn.deployment,
        status=turn.status,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        reasoning_tokens=reasoning_tokens,
        cost_usd=turn.cost_usd,
        cost_source=turn.cost_source,
        time_to_first_token=turn.time_to_first_token,
    )


def usage(dialect: Dialect, project: str | None, since: float) -> Returning[list[UsageRow]]:
    """Totals by project, model and key of the turns (stored or not) and kept calls since
    ``since``."""
    number = dialect.json_integer
    scope = "created_at >= :since AND (CAST(:project AS TEXT) IS NULL OR project = :project)"
    found = yield rows(
        f"""
        SELECT project, model, coalesce(key_id, '-'), sum(n), sum(i), sum(o), sum(c), sum(r),
               sum(k) FROM (
            SELECT project, {dialect.json_text("request", "model")} AS model,
                   {dialect.json_text("metadata", "key_id")} AS key_id, 1 AS n,
                   {number("response", "usage", "input_tokens")} AS i,
                   {number("response", "usage", "output_tokens")} AS o,
                   {number("response", "usage", "input_tokens_details", "cached_tokens")} AS c,
                   {number("response", "usage", "output_tokens_details", "reasoning_tokens")} AS r,
                   {dialect.json_real("metadata", "cost_usd")} AS k
            FROM responses WHERE {scope}
            UNION ALL
            SELECT project, model, key_id, 1, input_tokens, output_tokens, cached_tokens,
                   reasoning_tokens, cost_usd
            FROM unstored_turns WHERE {scope}
            UNION ALL
            SELECT project, model, NULL, 0, input_tokens, output_tokens, cached_tokens,
                   reasoning_tokens, 0
            FROM usage_records WHERE {scope}
        ) AS turns_and_ledger GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        """,
        since=since,
        project=project,
    )
    return [usage_row(row[0], row[1], *row[3:8], cost=row[8], key=row[2]) for row in found]


def prune(dialect: Dialect, before: float, limit: int) -> Returning[Pruned]:
    """Delete up to ``limit`` turns and ``limit`` conversations last active before ``before``.

    On PostgreSQL, rows another instance is deleting right now are skipped, not waited
    for: each row is deleted, and counted, by one instance.
    """
    deleted = []
    for table, column in (
        ("responses", "created_at"),
        ("conversations", "updated_at"),
        ("usage_records", "created_at"),
        ("unstored_turns", "created_at"),
    ):
        row = dialect.row_locator
        count = yield run(
            f"DELETE FROM {table} WHERE {row} IN (SELECT {row} FROM {table}"
            f" WHERE {column} < :before LIMIT :limit{dialect.skip_locked})",
            before=before,
            limit=limit,
        )
        deleted.append(count)
    return Pruned(deleted[0], deleted[1], deleted[2] + deleted[3])
