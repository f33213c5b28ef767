"""The conversation half of the store contract, for every backend."""

from __future__ import annotations

import anyio
import pytest

from session import (
    Conversation,
    ConversationNotFound,
    InvalidCursor,
    ItemConflict,
    ItemNotFound,
    SessionStore,
)

from .records import item_ids, turn, user_item

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


async def new_conversation(store: SessionStore, items: int = 0, project: str = "default") -> str:
    conversation = Conversation(id="conv_1", project=project, metadata={"topic": "t"})
    await store.create_conversation(
        conversation, [user_item(f"i{n}", f"m{n}") for n in range(items)]
    )
    return conversation.id


async def test_create_read_update_delete(store: SessionStore) -> None:
    stored = await store.create_conversation(
        Conversation(id="conv_1", metadata={"a": "1"}),
        [{"type": "message", "role": "user", "content": "hello"}],
    )
    [item] = stored
    assert item["id"].startswith("msg_") and item["status"] == "completed"
    assert item["content"] == [{"type": "input_text", "text": "hello"}]
    found = await store.get_conversation("default", "conv_1")
    assert found.metadata == {"a": "1"}
    updated = await store.update_conversation("default", "conv_1", {"b": "2"})
    assert updated.metadata == {"b": "2"}
    assert (await store.get_conversation("default", "conv_1")).metadata == {"b": "2"}
    await store.delete_conversation("default", "conv_1")
    with pytest.raises(ConversationNotFound):
        await store.get_conversation("default", "conv_1")
    with pytest.raises(ConversationNotFound):
        await store.conversation_items("default", "conv_1")
    with pytest.raises(ConversationNotFound):
        await store.delete_conversation("default", "conv_1")


async def test_appends_keep_order_and_sequence_survives_deletes(store: SessionStore) -> None:
    cid = await new_conversation(store, items=3)
    await store.delete_item("default", cid, "i2")
    await store.append_items("default", cid, [user_item("i3", "m3"), user_item("i4", "m4")])
    assert item_ids(await store.conversation_items("default", cid)) == ["i0", "i1", "i3", "i4"]
    with pytest.raises(ItemNotFound):
        await store.get_item("default", cid, "i2")
    with pytest.raises(ItemNotFound):
        await store.delete_item("default", cid, "i2")
    assert (await store.get_item("default", cid, "i3"))["content"][0]["text"] == "m3"


async def test_appending_the_same_item_again_is_a_no_op(store: SessionStore) -> None:
    cid = await new_conversation(store, items=2)
    again = await store.append_items("default", cid, [user_item("i1", "m1"), user_item("i2", "m2")])
    assert item_ids(again) == ["i1", "i2"]
    assert item_ids(await store.conversation_items("default", cid)) == ["i0", "i1", "i2"]


async def test_an_id_with_other_content_conflicts_and_nothing_is_written(
    store: SessionStore,
) -> None:
    cid = await new_conversation(store, items=2)
    with pytest.raises(ItemConflict):
        await store.append_items(
            "default", cid, [user_item("new", "x"), user_item("i1", "changed")]
        )
    assert item_ids(await store.conversation_items("default", cid)) == ["i0", "i1"]


async def test_item_paging_in_both_orders_stays_correct_while_appending(
    store: SessionStore,
) -> None:
    cid = await new_conversation(store, items=5)
    page = await store.list_items("default", cid, limit=2)
    assert item_ids(page.data) == ["i4", "i3"] and page.has_more
    await store.append_items("default", cid, [user_item("i5", "m5")])
    page = await store.list_items("default", cid, limit=2, after=page.last_id)
    assert item_ids(page.data) == ["i2", "i1"] and page.has_more
    page = await store.list_items("default", cid, limit=2, after=page.last_id)
    assert item_ids(page.data) == ["i0"] and not page.has_more
    page = await store.list_items("default", cid, order="asc", limit=4, after="i1")
    assert item_ids(page.data) == ["i2", "i3", "i4", "i5"] and not page.has_more
    with pytest.raises(InvalidCursor):
        await store.list_items("default", cid, after="nope")


async def test_conversations_are_isolated_by_project(store: SessionStore) -> None:
    cid = await new_conversation(store, items=1, project="alpha")
    for call in (
        store.get_conversation("beta", cid),
        store.append_items("beta", cid, [user_item("x", "x")]),
        store.list_items("beta", cid),
        store.get_item("beta", cid, "i0"),
    ):
        with pytest.raises(ConversationNotFound):
            await call


async def test_a_turn_and_its_conversation_items_are_saved_together(store: SessionStore) -> None:
    cid = await new_conversation(store, items=1)
    record = turn("r1")
    record.conversation_id = cid
    items = [*record.request.input, *record.response.output]
    await store.save(record, conversation_items=items)
    assert item_ids(await store.conversation_items("default", cid)) == ["i0", "in_r1_0", "out_r1"]
    # a refused save appends nothing
    from session import SaveConflict

    with pytest.raises(SaveConflict):
        await store.save(turn("r1"), conversation_items=[user_item("late", "x")])
    assert len(await store.conversation_items("default", cid)) == 3


async def test_concurrent_appends_neither_interleave_nor_lose(store: SessionStore) -> None:
    cid = await new_conversation(store)

    async def writer(name: str) -> None:
        for n in range(10):
            await store.append_items(
                "default", cid, [user_item(f"{name}{n}a", "x"), user_item(f"{name}{n}b", "y")]
            )

    async with anyio.create_task_group() as group:
        for name in ("p", "q", "r"):
            group.start_soon(writer, name)
    ids = item_ids(await store.conversation_items("default", cid))
    assert len(ids) == 60
    for first, second in zip(ids[::2], ids[1::2], strict=True):
        assert str(first)[:-1] == str(second)[:-1]  # each batch stays together
