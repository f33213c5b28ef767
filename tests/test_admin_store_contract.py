"""Managed keys, retention and usage: the operator's half of the store contract."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from session import (
    ChainAncestorMissing,
    Conversation,
    ConversationNotFound,
    KeyNotFound,
    MemoryStore,
    Pruned,
    ResponseNotFound,
    SessionStore,
    StoredConversation,
    UnstoredTurn,
    UsageRecord,
    UsageRow,
    hash_secret,
    new_key,
    normalise_input,
)
from session.browse import usage_series

from .conftest import StoreFactory
from .records import turn, user_item

pytestmark = [pytest.mark.anyio, pytest.mark.contract]

DAY = 86400.0


async def test_a_managed_key_is_found_by_its_secret_only(store: SessionStore) -> None:
    key, secret = new_key("team-a", name="ci", requests_per_minute=60)
    await store.create_key(key)
    found = await store.find_key(hash_secret(secret))
    assert found == key and found.revoked_at is None
    assert secret not in found.model_dump_json()
    assert await store.find_key(hash_secret(secret + "x")) is None


async def test_keys_are_listed_by_project_and_revoked_once(store: SessionStore) -> None:
    first, secret = new_key("team-a")
    second, _ = new_key("team-b")
    await store.create_key(first)
    await store.create_key(second)
    assert [k.id for k in await store.list_keys()] == [first.id, second.id]
    assert [k.id for k in await store.list_keys("team-b")] == [second.id]
    revoked = await store.revoke_key(first.id)
    assert revoked.revoked_at is not None
    assert (await store.revoke_key(first.id)).revoked_at == revoked.revoked_at
    found = await store.find_key(hash_secret(secret))
    assert found is not None and found.revoked_at == revoked.revoked_at
    with pytest.raises(KeyNotFound):
        await store.revoke_key("key_missing")


async def aged_conversation(store: SessionStore, conversation_id: str, age: float) -> None:
    conversation = Conversation(id=conversation_id, created_at=time.time() - age)
    await store.create_conversation(conversation, [])


async def test_prune_deletes_what_is_older_in_batches(store: SessionStore) -> None:
    for n in range(5):
        old = turn(f"old{n}", project="p1" if n % 2 else "p2")
        old.created_at -= 40 * DAY
        await store.save(old)
    await store.save(turn("fresh"))
    await aged_conversation(store, "conv_old", 40 * DAY)
    await aged_conversation(store, "conv_new", 0)
    cutoff = time.time() - 30 * DAY
    assert await store.prune(cutoff, 3) == Pruned(3, 1)
    assert await store.prune(cutoff, 3) == Pruned(2, 0)
    assert not await store.prune(cutoff, 3)
    await store.get("default", "fresh")
    with pytest.raises(ResponseNotFound):
        await store.get("p2", "old0")
    with pytest.raises(ConversationNotFound):
        await store.get_conversation("default", "conv_old")
    await store.get_conversation("default", "conv_new")


async def test_a_conversation_in_use_is_not_pruned(store: SessionStore) -> None:
    await aged_conversation(store, "conv_1", 40 * DAY)
    await store.append_items("default", "conv_1", [user_item("i1", "still here")])
    assert not await store.prune(time.time() - 30 * DAY, 100)
    assert [i["id"] for i in await store.conversation_items("default", "conv_1")] == ["i1"]


async def test_a_pruned_ancestor_is_named_when_its_chain_is_continued(
    store: SessionStore,
) -> None:
    root = turn("root")
    root.created_at -= 40 * DAY
    await store.save(root)
    await store.save(turn("child", "root"))
    await store.resolve_chain("default", "child")  # cached now
    assert await store.prune(time.time() - 30 * DAY, 100) == Pruned(1, 0)
    with pytest.raises(ChainAncestorMissing, match="'root'"):
        await store.resolve_chain("default", "child")


async def test_two_pruners_at_once_delete_each_record_once(store_factory: StoreFactory) -> None:
    first = store_factory()
    second = first if isinstance(first, MemoryStore) else store_factory()  # memory: one store
    try:
        for n in range(60):
            old = turn(f"old{n}")
            old.created_at -= 40 * DAY
            await first.save(old)
        cutoff = time.time() - 30 * DAY

        async def drain(store: SessionStore) -> int:
            deleted = 0
            while pruned := await store.prune(cutoff, 7):
                deleted += pruned.responses
            return deleted

        counts = await asyncio.gather(drain(first), drain(second))
        assert sum(counts) == 60
    finally:
        await first.close()
        if second is not first:
            await second.close()


async def test_usage_totals_tokens_by_project_and_model(store: SessionStore) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 4,
        "total_tokens": 14,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens_details": {"reasoning_tokens": 2},
    }
    for n, project in enumerate(["a", "a", "b"]):
        record = turn(f"r{n}", project=project)
        record.response.usage = usage
        await store.save(record)
    await store.save(turn("no_usage", project="a"))
    old = turn("old", project="a")
    old.created_at -= 10 * DAY
    old.response.usage = usage
    await store.save(old)
    since = time.time() - 7 * DAY
    model = turn("x").request.model
    assert await store.usage(None, since) == [
        UsageRow("a", model, 3, 20, 8, 6, 4),
        UsageRow("b", model, 1, 10, 4, 3, 2),
    ]
    assert await store.usage("b", since) == [UsageRow("b", model, 1, 10, 4, 3, 2)]
    assert await store.usage("c", since) == []


async def test_usage_totals_the_cost_of_priced_turns(store: SessionStore) -> None:
    for n, cost in enumerate([0.25, 0.125, None]):
        record = turn(f"r{n}", project="a")
        record.response.usage = {"input_tokens": 10, "output_tokens": 4}
        if cost is not None:
            record.metadata = {**record.metadata, "cost_usd": cost}
        await store.save(record)
    [row] = await store.usage("a", time.time() - DAY)
    assert (row.responses, row.cost_usd) == (3, 0.375)


async def test_usage_adds_the_calls_no_stored_turn_holds(store: SessionStore) -> None:
    record = turn("r1", project="a")
    record.response.usage = {"input_tokens": 10, "output_tokens": 4}
    await store.save(record)
    model = record.request.model
    now = time.time()
    for project, tokens in (("a", (5, 2, 1, 0)), ("a", (7, 3, 0, 1)), ("b", (1, 1, 0, 0))):
        await store.record_usage(UsageRecord(project, model, now, tokens))
    await store.record_usage(UsageRecord("a", "summariser", now - 10 * DAY, (100, 1, 0, 0)))
    since = now - 7 * DAY
    assert await store.usage(None, since) == [
        UsageRow("a", model, 1, 22, 9, 1, 1),
        UsageRow("b", model, 0, 1, 1, 0, 0),
    ]
    assert await store.usage("b", since) == [UsageRow("b", model, 0, 1, 1, 0, 0)]
    assert await store.usage("a", now - 30 * DAY) == [
        UsageRow("a", model, 1, 22, 9, 1, 1),
        UsageRow("a", "summariser", 0, 100, 1, 0, 0),
    ]
    await store.prune(now - 7 * DAY, 100)  # the old record goes with the old turns
    assert await store.usage("a", now - 30 * DAY) == [UsageRow("a", model, 1, 22, 9, 1, 1)]


def unstored(project: str, key_id: str | None, at: float, **figures: object) -> UnstoredTurn:
    made = UnstoredTurn(
        project, "m", at, at + 2.0, key_id, "p", "p", "completed", (10, 4, 3, 2), 0.5, "config"
    )
    return dataclasses.replace(made, **figures)  # type: ignore[arg-type]


async def test_unstored_turns_count_as_turns_in_usage_and_go_with_retention(
    store: SessionStore,
) -> None:
    record = turn("r1", project="a")
    record.response.usage = {"input_tokens": 10, "output_tokens": 4}
    record.metadata = {**record.metadata, "key_id": "key_1", "cost_usd": 0.25}
    record.request.model = "m"
    await store.save(record)
    now = time.time()
    await store.record_unstored(unstored("a", "key_1", now))
    await store.record_unstored(unstored("a", None, now, status="failed", cost_usd=None))
    await store.record_unstored(unstored("b", "key_2", now - 40 * DAY))
    assert await store.usage(None, now - 7 * DAY) == [
        UsageRow("a", "m", 1, 10, 4, 3, 2, 0.0, "-"),
        UsageRow("a", "m", 2, 20, 8, 3, 2, 0.75, "key_1"),
    ]
    assert await store.usage("b", 0.0) == [UsageRow("b", "m", 1, 10, 4, 3, 2, 0.5, "key_2")]
    samples = await store.usage_samples(None, now - 7 * DAY, now + 60)
    series = usage_series(samples, since=now - 3600, until=now + 60, bucket=3600, by="key")
    groups = {group["group"]: group for group in series["groups"]}
    assert (groups["key_1"]["requests"], groups["key_1"]["cost_usd"]) == (2, 0.75)
    assert groups["key_1"]["latency_p50"] == 2.0
    assert series["totals"]["requests"] == 3 and series["totals"]["errors"] == 1
    assert await store.prune(now - 30 * DAY, 100) == Pruned(0, 0, 1)
    assert await store.usage("b", 0.0) == []


async def test_stream_events_are_kept_in_order_and_pruned_once_finished(
    store: SessionStore,
) -> None:
    await store.save(turn("resp_running", status="in_progress"))
    await store.save(turn("resp_done"))
    for response_id in ("resp_running", "resp_done"):
        await store.append_events("default", response_id, [(0, '{"n":0}'), (1, '{"n":1}')])
        await store.append_events("default", response_id, [(1, '{"n":1}'), (2, '{"n":2}')])
    assert await store.events_after("default", "resp_done", -1) == [
        (0, '{"n":0}'),
        (1, '{"n":1}'),
        (2, '{"n":2}'),
    ]
    assert await store.events_after("default", "resp_done", 1) == [(2, '{"n":2}')]
    assert await store.events_after("default", "resp_done", 0, limit=1) == [(1, '{"n":1}')]
    assert await store.events_after("other", "resp_done", -1) == []
    assert await store.prune_events(time.time() + 1) == 3  # the running response keeps its
    assert await store.events_after("default", "resp_done", -1) == []
    assert len(await store.events_after("default", "resp_running", -1)) == 3


async def test_the_first_shared_secret_stored_wins(store_factory: StoreFactory) -> None:
    first = store_factory()
    second = first if isinstance(first, MemoryStore) else store_factory()
    try:
        assert await first.shared_secret("compaction", "one") == "one"
        assert await second.shared_secret("compaction", "two") == "one"
        assert await second.shared_secret("other", "three") == "three"
    finally:
        await first.close()
        if second is not first:
            await second.close()


# -- whole records, for moving a store (``gateway export`` and ``import``) ------------------


async def test_records_are_listed_whole_page_by_page_oldest_first(store: SessionStore) -> None:
    saved = []
    # Equal times are ordered by id, bytewise: "B" < "_x" < "a" (not a locale's "a" < "B").
    for response_id, age, project in [
        ("a", 5.0, "p1"),
        ("B", 5.0, "p1"),
        ("_x", 5.0, "p1"),
        ("old", 9.0, "p1"),
        ("new", 1.0, "p1"),
        ("other", 3.0, "p2"),
    ]:
        record = turn(response_id, project=project, instructions="be brief")
        record.created_at = 1_700_000_000.5 - age
        record.metadata = {"tag": response_id}
        await store.save(record)
        saved.append(record)
    await store.create_conversation(Conversation(id="conv_c", project="p3"), [])
    assert await store.projects() == ["p1", "p2", "p3"]

    listed = []
    after = None
    while page := await store.list_responses("p1", after=after, limit=2):
        assert len(page) <= 2
        listed += page
        after = (page[-1].created_at, page[-1].id)
    assert [r.id for r in listed] == ["old", "B", "_x", "a", "new"]
    assert listed == sorted(saved[:5], key=lambda r: (r.created_at, r.id.encode()))
    assert await store.list_responses("p2") == [saved[5]]
    assert await store.list_responses("p3") == []


async def test_conversations_are_listed_with_the_time_their_items_last_changed(
    store: SessionStore,
) -> None:
    for conversation_id in ("conv_b", "conv_a"):
        conversation = Conversation(id=conversation_id, created_at=100.0, metadata={"k": "v"})
        await store.create_conversation(conversation, [])
    await store.append_items("default", "conv_b", [user_item("i1", "hello")])
    first, second = await store.list_conversations("default")
    assert [first.conversation.id, second.conversation.id] == ["conv_a", "conv_b"]
    assert first.conversation == Conversation(id="conv_a", created_at=100.0, metadata={"k": "v"})
    assert first.updated_at == 100.0 and second.updated_at > time.time() - 60
    after = (first.conversation.created_at, first.conversation.id)
    assert await store.list_conversations("default", after=after, limit=5) == [second]
    assert await store.list_conversations("default", limit=1) == [first]


async def test_a_conversation_is_restored_as_it_was_kept_and_only_once(
    store: SessionStore,
) -> None:
    conversation = Conversation(id="conv_1", project="p", created_at=50.0, metadata={"a": "1"})
    items = normalise_input([user_item(f"i{n}", f"m{n}") for n in (3, 1, 2)])  # as kept
    kept = StoredConversation(conversation, time.time() - 40 * DAY)
    assert await store.restore_conversation(kept, items)
    assert await store.get_conversation("p", "conv_1") == conversation
    assert await store.conversation_items("p", "conv_1") == items
    assert await store.list_conversations("p") == [kept]

    taken = StoredConversation(conversation.model_copy(update={"metadata": {}}), 1.0)
    assert not await store.restore_conversation(taken, [user_item("i9", "other")])
    assert await store.list_conversations("p") == [kept]
    assert await store.conversation_items("p", "conv_1") == items
    # Retention goes by the time restored: forty days ago.
    assert await store.prune(time.time() - 30 * DAY, 100) == Pruned(0, 1)
