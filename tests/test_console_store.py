"""What the console reads of every backend: a chain's ancestors a page at a time, a turn's
children, recent turns by filter, and usage samples that total as ``usage`` does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from session import SessionStore
from session.browse import TurnQuery, usage_series
from session.sql.browse import find
from session.sql.dialect import POSTGRES, SQLITE, Dialect
from session.sql.statement import Statement
from session.sqlite.schema import migrate as sqlite_migrate

from .console_data import START, seed

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


async def test_ancestors_page_up_a_chain_and_children_are_its_branches(
    store: SessionStore,
) -> None:
    seeded = await seed(store, deep=30)
    page = await store.ancestors("default", seeded.deep_head, 10)
    assert [turn.id for turn in page] == [f"resp_deep_{n:05d}" for n in range(29, 19, -1)]
    rest = await store.ancestors("default", "resp_deep_00004", 10)
    assert [turn.id for turn in rest][-1] == seeded.deep_root and len(rest) == 5
    assert await store.ancestors("default", "resp_missing", 10) == []
    assert await store.ancestors("team-b", seeded.deep_head, 10) == []
    whole = await store.ancestors("default", seeded.ids["image"], 100)
    assert whole[0].metadata["route"]["answered_by"] == "echo"
    assert [turn.id for turn in whole][-1] == seeded.ids["root"]
    children = await store.children("default", seeded.ids["middle"], 10)
    assert [turn.id for turn in children] == [seeded.ids["branch_a"], seeded.ids["branch_b"]]
    assert [t.id for t in await store.children("default", seeded.ids["middle"], 1)] == [
        seeded.ids["branch_a"]
    ]
    assert await store.children("team-b", seeded.ids["middle"], 10) == []


async def test_recent_turns_by_filter_newest_first(store: SessionStore) -> None:
    seeded = await seed(store, deep=5)
    ids = seeded.ids
    every = await store.find_responses(TurnQuery(), 100)
    assert len(every) == 13
    assert [turn.created_at for turn in every] == sorted(
        (turn.created_at for turn in every), reverse=True
    )
    after = await store.find_responses(TurnQuery(before=(every[2].created_at, every[2].id)), 3)
    assert [turn.id for turn in after] == [turn.id for turn in every[3:6]]
    cases = {
        TurnQuery(project="team-b"): [ids["other"]],
        TurnQuery(model="chat-model"): [ids["injection"]],
        TurnQuery(status="failed"): [ids["branch_b"]],
        TurnQuery(request_id=f"req_{ids['root']}"): [ids["root"]],
        TurnQuery(key_id="static:none"): [],
        TurnQuery(since=START + 100, until=START + 200): [ids["branch_b"], ids["branch_a"]],
        TurnQuery(project="team-b", model="echo-1"): [],
    }
    for query, expected in cases.items():
        assert [turn.id for turn in await store.find_responses(query, 100)] == expected, query


async def test_usage_samples_total_as_usage_does(store: SessionStore) -> None:
    await seed(store, deep=7)
    samples = await store.usage_samples(None, 0.0, START + 10**6)
    series = usage_series(samples, since=START - 60, until=START + 7140, bucket=3600, by="project")
    rows = await store.usage(None, 0.0)
    totals = series["totals"]
    assert totals["requests"] == sum(row.responses for row in rows) == 15
    assert totals["input_tokens"] == sum(row.input_tokens for row in rows)
    assert totals["output_tokens"] == sum(row.output_tokens for row in rows)
    assert totals["cached_tokens"] == sum(row.cached_tokens for row in rows)
    assert totals["reasoning_tokens"] == sum(row.reasoning_tokens for row in rows)
    assert totals["cost_usd"] == pytest.approx(sum(row.cost_usd for row in rows))
    assert totals["errors"] == 1
    assert [bucket["requests"] for bucket in series["buckets"]] == [15, 0]
    only_b = await store.usage_samples("team-b", 0.0, START + 10**6)
    assert [sample.project for sample in only_b] == ["team-b"]
    assert await store.usage_samples(None, START + 10**6, START + 10**7) == []


def _request_id_search(dialect: Dialect) -> Statement:
    statement: Statement = next(find(dialect, TurnQuery(request_id="req_1", project="p"), 1))
    return statement


def test_a_request_id_is_found_through_its_index_on_sqlite(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "sessions.db", isolation_level=None)
    sqlite_migrate(conn)
    statement = _request_id_search(SQLITE)
    plan = conn.execute(f"EXPLAIN QUERY PLAN {statement.sql}", statement.params).fetchall()
    conn.close()
    assert any("USING INDEX responses_request_id" in row[-1] for row in plan), plan


async def test_a_request_id_is_found_through_its_index_on_postgres(postgres_dsn: str) -> None:
    import psycopg

    from session.postgres.schema import migrate as postgres_migrate

    statement = _request_id_search(POSTGRES)
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as conn:
        await postgres_migrate(conn)
        await conn.execute("SET enable_seqscan = off")  # a tiny table: ask whether it can
        cursor = await conn.execute(
            f"EXPLAIN {POSTGRES.render(statement.sql)}",  # type: ignore[arg-type]
            statement.params,
        )
        plan = " ".join(row[0] for row in await cursor.fetchall())
    assert "responses_request_id" in plan, plan
