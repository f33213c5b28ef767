"""The Responses API through the openai SDK with strict validation, against a fake upstream."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from .conftest import Gateway

pytestmark = [pytest.mark.api]


def test_three_turn_chain_sends_full_history_and_latest_instructions(gateway: Gateway) -> None:
    client = gateway.client()
    first = client.responses.create(model="chat-model", input="one", instructions="OLD-1")
    second = client.responses.create(
        model="chat-model", input="two", instructions="OLD-2", previous_response_id=first.id
    )
    third = client.responses.create(
        model="chat-model", input="three", instructions="NEW", previous_response_id=second.id
    )
    assert third.output_text == "reply to: three"
    assert third.previous_response_id == second.id
    assert third.instructions == "NEW"
    sent = gateway.fake.last
    assert sent["model"] == "upstream-chat"
    assert sent["messages"] == [
        {"role": "system", "content": "NEW"},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "reply to: one"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "reply to: two"},
        {"role": "user", "content": "three"},
    ]
    assert third.usage is not None
    assert third.usage.input_tokens == 11 and third.usage.output_tokens == 7
    assert third.usage.input_tokens_details.cached_tokens == 3
    assert third.usage.output_tokens_details.reasoning_tokens == 2


def test_a_long_chain_and_its_branches_send_their_whole_context_every_turn(
    gateway: Gateway,
) -> None:
    """Past a few turns the context is sent from the translation and JSON kept from the
    turn before: what arrives upstream is still exactly the chain's messages."""
    client = gateway.client()
    expected: list[dict[str, str]] = []
    previous, ids = None, []
    for n in range(8):
        response = client.responses.create(
            model="chat-model", input=f"q{n}", instructions=f"I{n}", previous_response_id=previous
        )
        sent = gateway.fake.last["messages"]
        assert sent == [
            {"role": "system", "content": f"I{n}"},
            *expected,
            {"role": "user", "content": f"q{n}"},
        ]
        expected += [
            {"role": "user", "content": f"q{n}"},
            {"role": "assistant", "content": f"reply to: q{n}"},
        ]
        previous = response.id
        ids.append(response.id)
    client.responses.create(model="chat-model", input="branch", previous_response_id=ids[5])
    assert gateway.fake.last["messages"] == [*expected[:12], {"role": "user", "content": "branch"}]


def test_a_long_chain_reaches_a_responses_upstream_whole_and_without_item_ids(
    gateway: Gateway,
) -> None:
    """Past a few turns the input's JSON is reused from the turn before; the upstream
    still gets exactly the chain's items, stateless."""

    def texts(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
        assert not any("id" in item for item in items)
        return [(item["role"], item["content"][0]["text"]) for item in items]

    client = gateway.client()
    expected: list[tuple[str, str]] = []
    previous, ids = None, []
    for n in range(8):
        response = client.responses.create(
            model="resp-model",
            input=[{"role": "user", "content": [{"type": "input_text", "text": f"q{n}"}]}],
            previous_response_id=previous,
        )
        sent = gateway.fake.last
        assert sent["store"] is False and "previous_response_id" not in sent
        assert texts(sent["input"]) == [*expected, ("user", f"q{n}")]
        expected += [("user", f"q{n}"), ("assistant", f"reply to: q{n}")]
        previous = response.id
        ids.append(response.id)
    client.responses.create(
        model="resp-model",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "branch"}]}],
        previous_response_id=ids[5],
    )
    assert texts(gateway.fake.last["input"]) == [*expected[:12], ("user", "branch")]


def test_branches_resolve_their_own_paths(gateway: Gateway) -> None:
    client = gateway.client()
    root = client.responses.create(model="chat-model", input="root")
    left = client.responses.create(model="chat-model", input="left", previous_response_id=root.id)
    client.responses.create(model="chat-model", input="right", previous_response_id=root.id)
    client.responses.create(model="chat-model", input="left again", previous_response_id=left.id)
    contents = [m["content"] for m in gateway.fake.last["messages"]]
    assert contents == ["root", "reply to: root", "left", "reply to: left", "left again"]


def test_retrieve_delete_then_chaining_from_the_deleted_id(gateway: Gateway) -> None:
    client = gateway.client()
    created = client.responses.create(model="chat-model", input="hello", metadata={"k": "v"})
    fetched = client.responses.retrieve(created.id)
    assert fetched.id == created.id
    assert fetched.output_text == "reply to: hello"
    assert fetched.metadata == {"k": "v"}
    deleted = client.responses.delete(created.id)
    assert deleted is None  # the SDK returns nothing; the raw body is checked below
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="chat-model", input="x", previous_response_id=created.id)
    assert caught.value.body == {
        "message": f"Previous response with id '{created.id}' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }


def test_delete_body_and_unknown_ids(gateway: Gateway) -> None:
    client = gateway.client()
    created = client.responses.create(model="echo", input="x")
    raw = client.with_raw_response.responses.delete(created.id)
    assert raw.http_response.json() == {"id": created.id, "object": "response", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)


def test_input_items_are_paged_like_openai(gateway: Gateway) -> None:
    client = gateway.client()
    items = [{"role": "user", "content": f"m{n}"} for n in range(7)]
    created = client.responses.create(model="chat-model", input=items)  # type: ignore[arg-type]
    texts = lambda page: [i.content[0].text for i in page]  # type: ignore[union-attr]  # noqa: E731
    everything = list(client.responses.input_items.list(created.id, limit=3, order="asc"))
    assert texts(everything) == [f"m{n}" for n in range(7)]
    newest = client.responses.input_items.list(created.id, limit=3)
    assert texts(newest.data) == ["m6", "m5", "m4"] and newest.has_more
    assert newest.first_id == newest.data[0].id and newest.last_id == newest.data[-1].id
    older = client.responses.input_items.list(created.id, limit=3, after=newest.last_id)
    assert texts(older.data) == ["m3", "m2", "m1"]
    before = client.responses.input_items.list(
        created.id, order="asc", extra_query={"before": everything[3].id}
    )
    assert texts(before.data) == ["m0", "m1", "m2"] and not before.has_more


def test_store_false_is_not_kept(gateway: Gateway) -> None:
    client = gateway.client()
    created = client.responses.create(model="chat-model", input="secret", store=False)
    assert created.store is False
    assert created.output_text == "reply to: secret"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="chat-model", input="x", previous_response_id=created.id)
    assert gateway.stored_rows() == 0


def test_ids_have_openai_prefixes_and_enough_randomness(gateway: Gateway) -> None:
    created = gateway.client().responses.create(model="chat-model", input="x")
    assert created.id.startswith("resp_") and len(created.id) >= len("resp_") + 32
    assert created.output[0].id.startswith("msg_")


def test_models_and_health(gateway: Gateway) -> None:
    models = gateway.client().models.list()
    assert {m.id for m in models} == {"chat-model", "resp-model"}
    import httpx

    assert httpx.get(f"{gateway.url}/healthz").json() == {"status": "ok"}


def test_unrouted_model_goes_to_the_default_provider(gateway: Gateway) -> None:
    first = gateway.client().responses.create(model="anything", input="remember me")
    second = gateway.client().responses.create(
        model="anything", input="and now", previous_response_id=first.id
    )
    assert second.output_text == "echo: and now | earlier: remember me"
    assert second.model == "anything"
