"""What every reader of a context refuses alike, and what every upstream call is metered as.

A tool output without its call, an empty compaction and a compaction item the gateway did not
seal are refused before anything goes upstream; every upstream call (a compaction's, a count
of input tokens) reaches ``/metrics``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from session import SQLiteStore, UsageRow

from .conftest import Gateway
from .fake_upstream import Reply
from .test_observability import scrape, value

pytestmark = [pytest.mark.api]

ORPHAN = {"type": "function_call_output", "call_id": "call_missing", "output": "x"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
MODELS = ["chat-model", "resp-model", "echo"]


def post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/responses{path}", json=body, timeout=30)


def usage_rows(gateway: Gateway) -> list[UsageRow]:
    """What ``gateway usage`` reports of the gateway's store."""

    async def read() -> list[UsageRow]:
        store = SQLiteStore(gateway.config.session.sqlite.path)
        try:
            return await store.usage(None, 0)
        finally:
            await store.close()

    return asyncio.run(read())


def assert_no_call_for(response: httpx.Response, call_id: str = "call_missing") -> None:
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "message": f"No tool call found for function call output with call_id {call_id}.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("stream", [False, True])
def test_an_output_whose_call_the_chain_lacks_is_refused(
    gateway: Gateway, model: str, stream: bool
) -> None:
    first = post(gateway.url, "", {"model": model, "input": "hi"}).json()
    sent, rows = len(gateway.fake.requests), gateway.stored_rows()
    refused = post(
        gateway.url,
        "",
        {"model": model, "input": [ORPHAN], "previous_response_id": first["id"], "stream": stream},
    )
    assert_no_call_for(refused)
    assert len(gateway.fake.requests) == sent and gateway.stored_rows() == rows


@pytest.mark.parametrize("model", MODELS)
def test_stateless_input_needs_the_call_before_its_output(gateway: Gateway, model: str) -> None:
    output = {**ORPHAN, "call_id": "call_1"}
    refused = post(gateway.url, "", {"model": model, "store": False, "input": [output, CALL]})
    assert_no_call_for(refused, "call_1")
    assert gateway.fake.requests == []
    answered = post(gateway.url, "", {"model": model, "store": False, "input": [CALL, output]})
    assert answered.status_code == 200, answered.text


def test_an_output_answers_a_call_of_an_earlier_turn(gateway: Gateway) -> None:
    gateway.fake.script(Reply(tool_calls=[("call_9", "lookup", '{"q": 1}')]))
    first = post(gateway.url, "", {"model": "chat-model", "input": "look it up"}).json()
    call_id = first["output"][-1]["call_id"]
    second = post(
        gateway.url,
        "",
        {
            "model": "chat-model",
            "previous_response_id": first["id"],
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "42"}],
        },
    )
    assert second.status_code == 200, second.text
    assert gateway.fake.last["messages"][-1]["tool_call_id"] == call_id


@pytest.mark.parametrize("model", MODELS)
def test_counting_and_compacting_refuse_what_a_turn_refuses(gateway: Gateway, model: str) -> None:
    for path in ("/input_tokens", "/compact"):
        assert_no_call_for(post(gateway.url, path, {"model": model, "input": [ORPHAN]}))
        cut = {"type": "compaction", "encrypted_content": "gwc1.AAAA"}
        refused = post(
            gateway.url, path, {"model": model, "input": [{"role": "user", "content": "hi"}, cut]}
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "invalid_encrypted_content"
        assert refused.json()["error"]["param"] == "input[1]"
    assert gateway.fake.requests == []


@pytest.mark.parametrize("model", MODELS)
def test_compacting_nothing_is_refused(gateway: Gateway, model: str) -> None:
    for body in ({"model": model}, {"model": model, "input": []}):
        refused = post(gateway.url, "/compact", body)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert (error["param"], error["code"]) == ("input", "missing_required_parameter")
    assert gateway.fake.requests == []


@pytest.mark.parametrize(
    ("model", "provider", "tokens"),
    [
        ("chat-model", "fake-chat", {"input": 11, "output": 7}),
        ("resp-model", "fake-responses", {"input": 5, "output": 2}),
    ],
)
def test_every_upstream_call_is_metered(
    gateway: Gateway, model: str, provider: str, tokens: dict[str, int]
) -> None:
    compacted = post(gateway.url, "/compact", {"model": model, "input": "summarise this"})
    assert compacted.status_code == 200, compacted.text
    counted = post(gateway.url, "/input_tokens", {"model": model, "input": "count this"})
    assert counted.status_code == 200, counted.text
    samples = scrape(gateway.url)
    calls = value(
        samples, "gateway_upstream_duration_seconds_count", provider=provider, model=model
    )
    # A chat upstream's tokens are counted here; a responses upstream counts them itself.
    assert calls == (1 if model == "chat-model" else 2)
    for kind, count in tokens.items():
        assert (
            value(samples, "gateway_tokens_total", project="default", model=model, kind=kind)
            == count
        )


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_a_compaction_reaches_gateway_usage(gateway: Gateway, model: str) -> None:
    assert post(gateway.url, "/compact", {"model": model, "input": "summarise"}).status_code == 200
    tokens = (11, 7, 3, 2) if model == "chat-model" else (5, 2, 0, 0)
    assert usage_rows(gateway) == [UsageRow("default", model, 0, *tokens)]


def test_a_context_management_summary_is_metered(gateway: Gateway) -> None:
    first = post(gateway.url, "", {"model": "chat-model", "input": "a long question " * 50})
    gateway.fake.script(Reply(text="the summary"), Reply(text="the answer"))
    second = post(
        gateway.url,
        "",
        {
            "model": "chat-model",
            "input": "next",
            "previous_response_id": first.json()["id"],
            "context_management": [{"type": "compaction", "compact_threshold": 10}],
        },
    )
    assert second.status_code == 200, second.text
    assert second.json()["output"][0]["type"] == "compaction"
    samples = scrape(gateway.url)
    labels = {"provider": "fake-chat", "model": "chat-model"}
    assert value(samples, "gateway_upstream_duration_seconds_count", **labels) == 3
    kind = {"project": "default", "model": "chat-model", "kind": "input"}
    assert value(samples, "gateway_tokens_total", **kind) == 3 * 11
    # Two stored turns, and the summary that no stored turn holds.
    assert usage_rows(gateway) == [UsageRow("default", "chat-model", 2, 3 * 11, 3 * 7, 9, 6)]


def test_a_conversation_refuses_a_compaction_item_it_could_not_open(gateway: Gateway) -> None:
    foreign = {"type": "compaction", "encrypted_content": "AAAA"}
    created = httpx.post(f"{gateway.url}/v1/conversations", json={"items": [foreign]})
    assert created.status_code == 400, created.text
    assert created.json()["error"]["param"] == "items[0].encrypted_content"
    assert created.json()["error"]["code"] == "invalid_encrypted_content"

    conversation = httpx.post(f"{gateway.url}/v1/conversations", json={}).json()["id"]
    items = f"{gateway.url}/v1/conversations/{conversation}/items"
    ours = post(gateway.url, "/compact", {"model": "chat-model", "input": "hi"}).json()
    sealed = ours["output"][-1]
    altered = {**sealed, "encrypted_content": sealed["encrypted_content"][:-4] + "AAAA"}
    for item in (foreign, altered):
        refused = httpx.post(items, json={"items": [{"role": "user", "content": "hello"}, item]})
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["param"] == "items[1].encrypted_content"
    assert httpx.get(items).json()["data"] == []

    assert httpx.post(items, json={"items": [sealed]}).status_code == 200
    turn = post(
        gateway.url, "", {"model": "chat-model", "input": "go on", "conversation": conversation}
    )
    assert turn.status_code == 200, turn.text
