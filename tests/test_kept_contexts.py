"""A Responses upstream's input JSON, reused from earlier requests of a chain."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.upstream.kept_contexts import EncodedInputs, object_with_array
from gateway.upstream.responses import upstream_body, upstream_payload


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
            body = orjson.loads(upstream_body(request, stream, encoded))
            assert body == upstream_payload(request, stream)
    assert encoded.kept_items() > 0


def test_a_branch_reuses_the_context_it_shares_and_nothing_else() -> None:
    encoded = EncodedInputs(min_items=1)
    requests = grown_chain(6)
    trunk = requests[-1][:-1]  # the fifth turn's whole context, up to its answer
    first = {"model": "m", "input": [*trunk, {"role": "user", "content": "left"}]}
    second = {"model": "m", "input": [*trunk, {"role": "user", "content": "right"}]}
    for request in (first, second, first):
        assert orjson.loads(upstream_body(request, False, encoded)) == upstream_payload(
            request, False
        )
    assert encoded.kept_items() == len(trunk)


def test_an_object_ends_with_its_array_of_encoded_runs() -> None:
    runs = [b"", b'{"a":1},2', b"", b'"x"']
    assert orjson.loads(object_with_array({"model": "m"}, "input", runs)) == {
        "model": "m",
        "input": [{"a": 1}, 2, "x"],
    }
    assert orjson.loads(object_with_array({}, "messages", [b""])) == {"messages": []}
