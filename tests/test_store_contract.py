"""The contract every session backend must satisfy."""

from __future__ import annotations

import time

import pytest

from session import (
    ChainAncestorMissing,
    ChainTooDeep,
    InvalidCursor,
    ResponseNotFound,
    ResponseStatus,
    SaveConflict,
    SessionStore,
    TurnNotContinuable,
)

from .conftest import StoreFactory
from .records import item_ids, turn

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


async def save_chain(store: SessionStore, length: int, prefix: str = "r") -> list[str]:
    ids = [f"{prefix}{n}" for n in range(length)]
    parent = None
    for response_id in ids:
        await store.save(turn(response_id, parent))
        parent = response_id
    return ids


async def test_round_trip(store: SessionStore) -> None:
    record = turn("resp_1", instructions="be brief")
    record.metadata = {"tag": "x"}
    await store.save(record)
    assert await store.get("default", "resp_1") == record


async def test_a_turns_timeline_is_kept_and_replaced_by_its_overwrite(store: SessionStore) -> None:
    started = turn("resp_1", status="in_progress")
    await store.save(started)
    assert (await store.get("default", "resp_1")).timeline is None
    steps = [
        {"kind": "resolve", "name": "chain", "start": 1.5, "end": 1.5004, "depth": 2},
        {"kind": "attempt", "name": "east/m", "start": 1.6, "end": 2.0, "first_token": 1.7},
        {"kind": "save", "name": "completed", "start": 2.1, "end": None},
    ]
    done = turn("resp_1", status="completed").model_copy(update={"timeline": steps})
    await store.save(done, overwrite=True)
    assert (await store.get("default", "resp_1")).timeline == steps


async def test_string_input_becomes_one_user_message_with_an_id(store: SessionStore) -> None:
    record = turn("resp_1")
    record.request = record.request.model_validate({"model": "echo", "input": "hello"})
    await store.save(record)
    [item] = (await store.get("default", "resp_1")).request.input
    assert item["type"] == "message" and item["role"] == "user"
    assert item["content"] == [{"type": "input_text", "text": "hello"}]
    assert str(item["id"]).startswith("msg_")


async def test_saved_and_read_records_are_isolated_from_callers(store: SessionStore) -> None:
    record = turn("resp_1")
    await store.save(record)
    record.request.input[0]["content"][0]["text"] = "mutated after save"
    read = await store.get("default", "resp_1")
    read.response.output.clear()
    again = await store.get("default", "resp_1")
    assert again.request.input[0]["content"][0]["text"] == "question 0 of resp_1"
    assert len(again.response.output) == 1


async def test_get_missing_raises_not_found(store: SessionStore) -> None:
    with pytest.raises(ResponseNotFound) as caught:
        await store.get("default", "resp_missing")
    assert caught.value.code == "response_not_found"
    assert "resp_missing" in caught.value.message


async def test_saving_an_existing_id_without_overwrite_conflicts(store: SessionStore) -> None:
    await store.save(turn("resp_1"))
    with pytest.raises(SaveConflict) as caught:
        await store.save(turn("resp_1"))
    assert caught.value.code == "save_conflict"


async def test_overwrite_replaces_a_record_keeping_its_parent(store: SessionStore) -> None:
    await store.save(turn("resp_0"))
    await store.save(turn("resp_1", "resp_0", status="in_progress"))
    await store.save(turn("resp_1", "resp_0", status="completed"), overwrite=True)
    assert (await store.get("default", "resp_1")).status == "completed"


async def test_overwrite_cannot_change_the_parent(store: SessionStore) -> None:
    await store.save(turn("resp_0"))
    await store.save(turn("resp_1", "resp_0"))
    await store.save(turn("resp_2", "resp_1"))
    with pytest.raises(SaveConflict):
        # would make resp_0 a child of its own descendant: a cycle
        await store.save(turn("resp_0", "resp_2"), overwrite=True)
    assert (await store.get("default", "resp_0")).previous_response_id is None


async def test_an_unfinished_turn_keeps_its_parent_too(store: SessionStore) -> None:
    await store.save(turn("resp_0"))
    await store.save(turn("resp_1", status="in_progress"))
    with pytest.raises(SaveConflict):
        await store.save(turn("resp_1", "resp_0", status="completed"), overwrite=True)
    kept = await store.get("default", "resp_1")
    assert (kept.status, kept.previous_response_id) == ("in_progress", None)


async def test_an_overwrite_of_a_missing_turn_stores_it(store: SessionStore) -> None:
    await store.save(turn("resp_1", status="failed"), overwrite=True)
    assert (await store.get("default", "resp_1")).status == "failed"


async def test_a_finished_turn_is_never_overwritten(store: SessionStore) -> None:
    await store.save(turn("resp_1", status="in_progress"))
    await store.save(turn("resp_1", status="failed"), overwrite=True)
    with pytest.raises(SaveConflict):
        await store.save(turn("resp_1", status="completed"), overwrite=True)
    assert (await store.get("default", "resp_1")).status == "failed"


async def test_stale_unfinished_turns_are_marked_failed(store: SessionStore) -> None:
    old, recent = turn("resp_old", status="in_progress"), turn("resp_new", status="in_progress")
    queued = turn("resp_queued", status="queued")  # a background turn never started
    old.created_at -= 3600
    queued.created_at -= 3600
    await store.save(old)
    await store.save(queued)
    await store.save(recent)
    await store.save(turn("resp_done"))
    error = {"code": "server_error", "message": "The gateway stopped."}
    assert await store.fail_stale(old.created_at + 1, error) == 2
    assert (await store.get("default", "resp_queued")).status == "failed"
    swept = await store.get("default", "resp_old")
    assert swept.status == "failed" and swept.response.error == error
    assert swept.completed_at is not None
    assert (await store.get("default", "resp_new")).status == "in_progress"
    assert (await store.get("default", "resp_done")).status == "completed"
    assert await store.fail_stale(old.created_at + 1, error) == 0
    await store.ping()


async def test_turns_of_an_instance_that_stopped_beating_are_failed(store: SessionStore) -> None:
    now = time.time()
    await store.beat("gw_live", now)
    await store.beat("gw_dead", now - 100)
    await store.beat("gw_dead", now - 60)  # its last beat counts
    runs: dict[str, tuple[str | None, ResponseStatus]] = {
        "resp_dead": ("gw_dead", "in_progress"),
        "resp_dead_queued": ("gw_dead", "queued"),
        "resp_dead_done": ("gw_dead", "completed"),
        "resp_live": ("gw_live", "in_progress"),
        "resp_unknown": ("gw_never_beat", "in_progress"),
        "resp_nobody": (None, "in_progress"),
    }
    for response_id, (instance, status) in runs.items():
        record = turn(response_id, status=status)
        record.instance_id = instance
        await store.save(record)
    assert (await store.get("default", "resp_dead")).instance_id == "gw_dead"
    error = {"code": "server_error", "message": "The gateway stopped."}
    assert await store.fail_orphaned(now - 30, error) == 2
    for response_id in ("resp_dead", "resp_dead_queued"):
        swept = await store.get("default", response_id)
        assert swept.status == "failed" and swept.response.error == error
        assert swept.completed_at is not None
    statuses = {r: (await store.get("default", r)).status for r in runs}
    assert statuses["resp_dead_done"] == "completed"
    assert statuses["resp_live"] == statuses["resp_unknown"] == statuses["resp_nobody"]
    assert statuses["resp_live"] == "in_progress"
    assert await store.fail_orphaned(now - 30, error) == 0


async def test_an_instance_forgotten_as_dead_is_alive_again_once_it_beats(
    store: SessionStore,
) -> None:
    now = time.time()
    await store.beat("gw_slow", now - 60)
    error = {"code": "server_error", "message": "The gateway stopped."}
    assert await store.fail_orphaned(now - 30, error) == 0  # forgotten: nothing ran there
    await store.beat("gw_slow", now)
    record = turn("resp_later", status="in_progress")
    record.instance_id = "gw_slow"
    await store.save(record)
    assert await store.fail_orphaned(now - 30, error) == 0
    assert (await store.get("default", "resp_later")).status == "in_progress"
    assert await store.fail_orphaned(now + 1, error) == 1  # its beat is stale from now + 1 on


async def test_chain_resolves_oldest_first_with_inputs_then_outputs(store: SessionStore) -> None:
    await save_chain(store, 3)
    chain = await store.resolve_chain("default", "r2")
    assert [t.id for t in chain.turns] == ["r0", "r1", "r2"]
    assert item_ids(chain.items) == ["in_r0_0", "out_r0", "in_r1_0", "out_r1", "in_r2_0", "out_r2"]


async def test_a_chains_turns_say_how_each_was_routed(store: SessionStore) -> None:
    route = {"answered_by": "east/m", "key": "east#1", "attempts": []}
    first = turn("r0")
    first.metadata = {"route": route}
    await store.save(first)
    unfinished = turn("r1", "r0", status="in_progress")
    await store.save(unfinished)
    finished = turn("r1", "r0")
    finished.metadata = {"route": {**route, "key": "east#0"}}
    await store.save(finished, overwrite=True)
    chain = await store.resolve_chain("default", "r1")
    assert [t.route for t in chain.turns] == [route, {**route, "key": "east#0"}]
    read = await store.chain_turns("default", "r1", 10)  # type: ignore[attr-defined]
    assert {t.id: t.route for t in read} == {"r0": route, "r1": {**route, "key": "east#0"}}
    await store.save(turn("r2", "r1"))
    assert (await store.resolve_chain("default", "r2")).turns[-1].route is None


async def test_instructions_are_absent_from_resolved_items(store: SessionStore) -> None:
    await store.save(turn("r0", instructions="SECRET-OLD-INSTRUCTIONS"))
    await store.save(turn("r1", "r0", instructions="SECRET-NEWER"))
    chain = await store.resolve_chain("default", "r1")
    assert "SECRET" not in repr(chain.items)


async def test_branches_resolve_independently(store: SessionStore) -> None:
    await save_chain(store, 2)
    await store.save(turn("left", "r1"))
    await store.save(turn("right", "r1"))
    left = await store.resolve_chain("default", "left")
    right = await store.resolve_chain("default", "right")
    assert [t.id for t in left.turns] == ["r0", "r1", "left"]
    assert [t.id for t in right.turns] == ["r0", "r1", "right"]


async def test_a_thousand_turn_chain_resolves_to_two_thousand_items(store: SessionStore) -> None:
    ids = await save_chain(store, 1000)
    chain = await store.resolve_chain("default", ids[-1])
    assert len(chain.items) == 2000
    expected = [name for rid in ids for name in (f"in_{rid}_0", f"out_{rid}")]
    assert item_ids(chain.items) == expected


async def test_resolving_a_missing_head_is_not_found(store: SessionStore) -> None:
    with pytest.raises(ResponseNotFound) as caught:
        await store.resolve_chain("default", "resp_nope")
    assert caught.value.response_id == "resp_nope"


async def test_a_deleted_ancestor_breaks_the_chain(store: SessionStore) -> None:
    await save_chain(store, 3)
    assert len((await store.resolve_chain("default", "r2")).turns) == 3  # kept in memory
    await store.delete("default", "r1")
    with pytest.raises(ChainAncestorMissing) as caught:
        await store.resolve_chain("default", "r2")
    assert caught.value.code == "chain_ancestor_missing"
    assert "r1" in caught.value.message


async def test_a_chain_deeper_than_the_limit_is_refused(store_factory: StoreFactory) -> None:
    store = store_factory(max_depth=5)
    await save_chain(store, 6)
    await store.resolve_chain("default", "r4")
    with pytest.raises(ChainTooDeep) as caught:
        await store.resolve_chain("default", "r5")
    assert caught.value.code == "chain_too_deep"
    assert "r5" in caught.value.message
    await store.close()


@pytest.mark.parametrize("status", ["in_progress", "failed", "cancelled", "queued"])
async def test_turns_that_cannot_be_continued(store: SessionStore, status: str) -> None:
    await store.save(turn("r0", status=status))  # type: ignore[arg-type]
    with pytest.raises(TurnNotContinuable) as caught:
        await store.resolve_chain("default", "r0")
    assert caught.value.code == "turn_not_continuable"
    assert "r0" in caught.value.message and status in caught.value.message


async def test_incomplete_turns_can_be_continued(store: SessionStore) -> None:
    await store.save(turn("r0", status="incomplete"))
    await store.save(turn("r1", "r0"))
    assert len((await store.resolve_chain("default", "r1")).turns) == 2


async def test_projects_are_isolated(store: SessionStore) -> None:
    await store.save(turn("r0", project="alpha"))
    await store.save(turn("r1", "r0", project="beta"))
    with pytest.raises(ResponseNotFound):
        await store.get("beta", "r0")
    with pytest.raises(ResponseNotFound):
        await store.delete("beta", "r0")
    with pytest.raises(ResponseNotFound):
        await store.list_input_items("beta", "r0")
    with pytest.raises(ChainAncestorMissing):
        await store.resolve_chain("beta", "r1")
    # the same id in another project is another record, not a conflict
    await store.save(turn("r0", project="beta"))
    assert (await store.get("alpha", "r0")).project == "alpha"


async def test_delete(store: SessionStore) -> None:
    await save_chain(store, 2)
    await store.delete("default", "r1")
    with pytest.raises(ResponseNotFound):
        await store.get("default", "r1")
    with pytest.raises(ResponseNotFound):
        await store.delete("default", "r1")
    assert (await store.get("default", "r0")).id == "r0"


async def test_input_item_paging(store: SessionStore) -> None:
    await store.save(turn("r0", inputs=5))
    ids = [f"in_r0_{n}" for n in range(5)]

    page = await store.list_input_items("default", "r0")
    assert item_ids(page.data) == ids[::-1]
    assert (page.first_id, page.last_id, page.has_more) == (ids[4], ids[0], False)

    page = await store.list_input_items("default", "r0", order="asc", limit=2)
    assert item_ids(page.data) == ids[:2] and page.has_more
    page = await store.list_input_items("default", "r0", order="asc", limit=2, after=page.last_id)
    assert item_ids(page.data) == ids[2:4] and page.has_more
    page = await store.list_input_items("default", "r0", order="asc", limit=2, after=page.last_id)
    assert item_ids(page.data) == ids[4:] and not page.has_more

    page = await store.list_input_items("default", "r0", order="desc", after=ids[3])
    assert item_ids(page.data) == [ids[2], ids[1], ids[0]]
    page = await store.list_input_items("default", "r0", order="desc", before=ids[1])
    assert item_ids(page.data) == [ids[4], ids[3], ids[2]]
    page = await store.list_input_items("default", "r0", order="asc", before=ids[3], limit=2)
    assert item_ids(page.data) == ids[:2] and page.has_more
    page = await store.list_input_items("default", "r0", order="asc", after=ids[0], before=ids[3])
    assert item_ids(page.data) == ids[1:3]

    with pytest.raises(InvalidCursor):
        await store.list_input_items("default", "r0", after="in_unknown")
