"""The Conversations API and ``conversation`` on responses, through the strict openai SDK."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from .conftest import Gateway

pytestmark = [pytest.mark.api]


def test_conversation_lifecycle(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "hello"}],
        metadata={"topic": "demo"},
    )
    assert conversation.id.startswith("conv_") and conversation.metadata == {"topic": "demo"}
    fetched = client.conversations.retrieve(conversation.id)
    assert fetched.id == conversation.id and fetched.created_at == conversation.created_at
    updated = client.conversations.update(conversation.id, metadata={"topic": "changed"})
    assert updated.metadata == {"topic": "changed"}
    added = client.conversations.items.create(
        conversation.id,
        items=[
            {"type": "message", "role": "assistant", "content": "hi there"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
        ],
    )
    assert [i.type for i in added.data] == ["message", "message"]
    assert added.first_id == added.data[0].id and not added.has_more
    item = client.conversations.items.retrieve(added.data[0].id, conversation_id=conversation.id)
    assert item.type == "message" and item.role == "assistant"  # type: ignore[union-attr]
    after_delete = client.conversations.items.delete(item.id, conversation_id=conversation.id)  # type: ignore[union-attr]
    assert after_delete.id == conversation.id
    listed = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [i.content[0].text for i in listed] == ["hello", "q"]  # type: ignore[union-attr]
    deleted = client.conversations.delete(conversation.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (
        conversation.id,
        "conversation.deleted",
        True,
    )
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.list(conversation.id)


def test_auto_pagination_over_more_than_a_hundred_items(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create()
    for start in range(0, 130, 20):
        client.conversations.items.create(
            conversation.id,
            items=[
                {"type": "message", "role": "user", "content": f"m{n}"}
                for n in range(start, min(start + 20, 130))
            ],
        )
    texts = lambda items: [i.content[0].text for i in items]  # type: ignore[union-attr]  # noqa: E731
    ascending = list(client.conversations.items.list(conversation.id, order="asc", limit=100))
    assert texts(ascending) == [f"m{n}" for n in range(130)]
    descending = list(client.conversations.items.list(conversation.id, limit=7))
    assert texts(descending) == [f"m{n}" for n in reversed(range(130))]


def test_responses_with_a_conversation_read_and_extend_it(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "I am Ada."}]
    )
    first = client.responses.create(model="chat-model", input="hi", conversation=conversation.id)
    assert first.conversation is not None and first.conversation.id == conversation.id
    client.responses.create(
        model="chat-model", input="who am I?", conversation={"id": conversation.id}
    )
    assert [m["content"] for m in gateway.fake.last["messages"]] == [
        "I am Ada.",
        "hi",
        "reply to: hi",
        "who am I?",
    ]
    items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [i.role for i in items] == ["user", "user", "assistant", "user", "assistant"]  # type: ignore[union-attr]
    streamed = list(
        client.responses.create(
            model="chat-model", input="stream", conversation=conversation.id, stream=True
        )
    )
    assert streamed[-1].type == "response.completed"
    assert len(list(client.conversations.items.list(conversation.id))) == 7


def test_conversation_errors(gateway: Gateway) -> None:
    client = gateway.client()
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.create(model="chat-model", input="x", conversation="conv_missing")
    assert missing.value.body["param"] == "conversation"  # type: ignore[index]
    assert gateway.fake.requests == []
    conversation = client.conversations.create()
    with pytest.raises(openai.BadRequestError) as both:
        client.responses.create(
            model="chat-model", input="x", conversation=conversation.id, previous_response_id="r"
        )
    assert both.value.param == "conversation"
    too_many = [{"type": "message", "role": "user", "content": "x"}] * 21
    with pytest.raises(openai.BadRequestError):
        client.conversations.items.create(conversation.id, items=too_many)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        client.conversations.create(metadata={str(n): "v" for n in range(17)})
    url = f"{gateway.url}/v1/conversations/{conversation.id}/items"
    item = {"id": "msg_fixed", "type": "message", "role": "user", "content": "one"}
    assert httpx.post(url, json={"items": [item]}).status_code == 200
    assert httpx.post(url, json={"items": [item]}).status_code == 200  # a safe retry
    conflict = httpx.post(url, json={"items": [{**item, "content": "two"}]})
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "item_conflict"
    assert len(list(client.conversations.items.list(conversation.id))) == 1


def test_concurrent_responses_on_one_conversation_do_not_interleave(gateway: Gateway) -> None:
    client = gateway.client()
    conversation = client.conversations.create()

    def turn(n: int) -> None:
        client.responses.create(model="chat-model", input=f"q{n}", conversation=conversation.id)

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(turn, range(12)))
    items = list(client.conversations.items.list(conversation.id, order="asc", limit=100))
    texts = [i.content[0].text for i in items]  # type: ignore[union-attr]
    assert len(texts) == 24
    for question, answer in zip(texts[::2], texts[1::2], strict=True):
        assert answer == f"reply to: {question}"
    # serialised: each turn saw every earlier turn of the conversation
    assert max(len(r["messages"]) for r in gateway.fake.requests) == 23
