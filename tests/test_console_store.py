"""What the console reads of every backend: a chain's ancestors a page at a time, a turn's
children, recent turns by filter, and usage samples that total as ``usage`` does."""

from __future__ import annotations

import pytest

from session import SessionStore
from session.browse import TurnQuery, usage_series

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
