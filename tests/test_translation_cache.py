"""A Responses upstream's input JSON, reused from earlier requests of a chain."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from gateway.upstream.translation.cache import EncodedInputs, object_with_array
from gateway.upstream.wires.responses.adapter import upstream_body, upstream_payload

from .conftest import Gateway

pytestmark = [pytest.mark.api]


def grown_chain(turns: int) -> list[list[dict[str, Any]]]:
    """The input of each turn of a chain whose answers hold reasoning and tool calls."""
    items: list[dict[str, Any]] = []
    requests = []
    for turn in range(turns):
        user = {"id": f"msg_u{turn}", "type": "message", "role": "user", "content": f"q{turn}"}
        items.append(user)
        requests.append(list(items))
        items.append({"id": f"rs_{turn}", "type": "reasoning", "summary": []})
        if turn % 2:
            call = {"id": f"fc_{turn}", "type": "function_call", "call_id": f"c{turn}"}
            items += [call, {"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"}]
        items.append({"id": f"msg_a{turn}", "type": "message", "role": "assistant", "content": "a"})
    return requests


def test_each_turn_sends_what_a_fresh_encoding_would_and_encodes_only_its_own_items() -> None:
    encoded = EncodedInputs(min_items=1)
    encoded_items: list[int] = []

    def counting(items: list[dict[str, Any]]) -> bytes:
        encoded_items.append(len(items))
        return orjson.dumps([{k: v for k, v in item.items() if k != "id"} for item in items])[1:-1]

    for number, items in enumerate(grown_chain(12)):
        encoded_items.clear()
        encoded.encode(items, counting)
        if number:  # kept up to the answer before: one turn's items and the new message
            assert sum(encoded_items) <= min(6, len(items))
        request = {"model": "m", "input": items, "instructions": "Be brief.", "conversation": None}
        for stream in (False, True):
            body = orjson.loads(b"".join(upstream_body(request, stream, encoded)))
            assert body == upstream_payload(request, stream)
    assert encoded.kept_items() > 0


def test_a_branch_reuses_the_context_it_shares_and_nothing_else() -> None:
    encoded = EncodedInputs(min_items=1)
    requests = grown_chain(6)
    trunk = requests[-1][:-1]  # the fifth turn's whole context, up to its answer
    first = {"model": "m", "input": [*trunk, {"role": "user", "content": "left"}]}
    second = {"model": "m", "input": [*trunk, {"role": "user", "content": "right"}]}
    for request in (first, second, first):
        assert orjson.loads(b"".join(upstream_body(request, False, encoded))) == upstream_payload(
            request, False
        )
    assert encoded.kept_items() == len(trunk)


def test_an_object_ends_with_its_array_of_encoded_runs() -> None:
    runs = [b"", b'{"a":1},2', b"", b'"x"']
    assert orjson.loads(b"".join(object_with_array({"model": "m"}, "input", runs))) == {
        "model": "m",
        "input": [{"a": 1}, 2, "x"],
    }
    assert orjson.loads(b"".join(object_with_array({}, "messages", [b""]))) == {"messages": []}


def test_a_long_run_is_a_piece_of_its_own_and_the_rest_is_joined() -> None:
    long = b",".join([b'"' + b"x" * 1000 + b'"'] * 70)
    pieces = object_with_array({"model": "m"}, "input", [b"1", long, b"", b"2,3"])
    assert pieces[1] is long  # sent from where it is kept, not copied
    assert len(pieces) == 3
    assert orjson.loads(b"".join(pieces)) == {"model": "m", "input": [1, *["x" * 1000] * 70, 2, 3]}
    only = object_with_array({}, "input", [long])
    assert only[1] is long and orjson.loads(b"".join(only)) == {"input": ["x" * 1000] * 70}


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_a_long_chain_reaches_the_upstream_whole_with_its_length_declared(
    gateway: Gateway, model: str
) -> None:
    client = gateway.client()
    essay = "word " * 20_000  # 100 KB: its encoding is sent as a piece of its own
    previous = None
    for turn in range(6):
        text = essay if turn == 0 else f"question {turn}"
        answer = client.responses.create(model=model, input=text, previous_response_id=previous)
        previous = answer.id
    for branch in ("left", "right"):
        client.responses.create(model=model, input=branch, previous_response_id=previous)
        sent = gateway.fake.last
        context = sent["messages"] if model == "chat-model" else sent["input"]
        assert len(context) == 13 and essay in json.dumps(context[0])
        assert "question 5" in json.dumps(context[10]) and branch in json.dumps(context[12])
        headers = gateway.fake.headers[-1]
        assert "transfer-encoding" not in headers
        assert int(headers["content-length"]) > 100_000
