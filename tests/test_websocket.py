"""WebSocket mode on ``/v1/responses``: the SDK's own client, several turns on one socket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

TERMINAL = ("response.completed", "response.incomplete", "response.failed", "error")


def turn(connection: Any, **create: Any) -> list[Any]:
    """Send one response.create and read its events to the end."""
    connection.response.create(**create)
    events = []
    for event in connection:
        events.append(event)
        if event.type in TERMINAL:
            return events
    raise AssertionError("the socket closed mid-response")


def raw_turn(socket: Any, frame: dict[str, Any]) -> list[dict[str, Any]]:
    socket.send(json.dumps(frame))
    events = []
    while True:
        event = json.loads(socket.recv(timeout=30))
        events.append(event)
        if event["type"] in TERMINAL:
            return events


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/v1/responses"


def test_turns_continue_on_one_socket_even_unstored(gateway: Gateway) -> None:
    client = gateway.client()
    with client.responses.connect() as connection:
        first = turn(connection, model="chat-model", input="My name is Ada.", store=False)
        assert [e.sequence_number for e in first] == list(range(len(first)))
        assert first[0].type == "response.created" and first[-1].type == "response.completed"
        done = first[-1].response
        assert done.store is False and done.output_text == "reply to: My name is Ada."
        second = turn(
            connection,
            model="chat-model",
            input="What is my name?",
            previous_response_id=done.id,
            store=False,
        )
        assert second[-1].type == "response.completed"
        roles = [m["role"] for m in gateway.fake.last["messages"]]
        assert roles == ["user", "assistant", "user"]  # the unstored turn, from the socket
        third = turn(connection, model="chat-model", input="Stored now.", store=True)
    stored = client.responses.retrieve(third[-1].response.id)
    assert stored.output_text == "reply to: Stored now."


def test_a_tool_call_round_trip(gateway: Gateway) -> None:
    gateway.fake.script(
        Reply(tool_calls=[("call_1", "lookup", '{"q": "x"}')], finish_reason="tool_calls"),
        Reply(text="found it"),
    )
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    with gateway.client().responses.connect() as connection:
        asked = turn(connection, model="chat-model", input="look it up", tools=tools)
        call = asked[-1].response.output[0]
        assert call.type == "function_call" and call.call_id == "call_1"
        answered = turn(
            connection,
            model="chat-model",
            tools=tools,
            previous_response_id=asked[-1].response.id,
            input=[{"type": "function_call_output", "call_id": "call_1", "output": "42"}],
        )
    assert answered[-1].response.output_text == "found it"
    assert gateway.fake.last["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "42",
    }


def test_errors_are_frames_and_the_socket_keeps_serving(gateway: Gateway) -> None:
    with connect(ws_url(gateway.url)) as socket:
        bad = raw_turn(socket, {"type": "response.create", "model": "echo", "temperature": 9})
        assert bad == [
            {
                "type": "error",
                "status": 400,
                "error": {
                    "message": bad[0]["error"]["message"],
                    "type": "invalid_request_error",
                    "param": "temperature",
                    "code": "decimal_above_max_value",
                },
            }
        ]
        unknown = raw_turn(socket, {"type": "response.dance"})
        assert unknown[0]["error"]["param"] == "type"
        missing = raw_turn(
            socket,
            {
                "type": "response.create",
                "model": "echo",
                "input": "x",
                "previous_response_id": "resp_nowhere",
            },
        )
        assert missing[0]["error"]["code"] == "previous_response_not_found"
        ok = raw_turn(socket, {"type": "response.create", "model": "echo", "input": "still here"})
        assert ok[-1]["type"] == "response.completed"


def test_what_codex_sends(gateway: Gateway) -> None:
    headers = {"OpenAI-Beta": "responses_websockets=2026-02-06"}
    with connect(ws_url(gateway.url), additional_headers=headers) as socket:
        warm = raw_turn(
            socket,
            {
                "type": "response.create",
                "model": "chat-model",
                "input": [{"type": "message", "role": "user", "content": "context first"}],
                "instructions": "Be brief.",
                "store": False,
                "stream": True,
                "generate": False,
                "client_metadata": {"x-codex-turn": "1"},
            },
        )
        assert [e["type"] for e in warm] == [
            "response.created",
            "response.in_progress",
            "response.completed",
        ]
        assert gateway.fake.requests == []  # a warm-up calls no model
        warm_id = warm[-1]["response"]["id"]
        socket.send(json.dumps({"type": "response.processed", "response_id": warm_id}))
        real = raw_turn(
            socket,
            {
                "type": "response.create",
                "model": "chat-model",
                "input": [{"type": "message", "role": "user", "content": "now answer"}],
                "previous_response_id": warm_id,
                "store": False,
                "stream_id": "lane-1",
                "client_metadata": {"x-codex-turn": "2"},
            },
        )
    assert real[-1]["type"] == "response.completed"
    assert all(event["stream_id"] == "lane-1" for event in real)
    sent = gateway.fake.last
    assert [m.get("content") for m in sent["messages"] if m["role"] == "user"] == [
        "context first",
        "now answer",
    ]
    assert "client_metadata" not in sent


def test_a_socket_needs_a_key_when_keys_are_on(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    key = "sk-socket-key-0123456789"
    auth = {
        "mode": "keys",
        "admin_key": "admin-key-0123456789abcdef",
        "keys": [{"key": key, "project": "p", "requests_per_minute": 2}],
    }
    config = gateway_config(fake_upstream[1], tmp_path / "w.db", auth=auth)
    with serve(create_app(config)) as url:
        with pytest.raises(InvalidStatus) as refused, connect(ws_url(url)):
            pass
        assert refused.value.response.status_code == 401
        headers = {"authorization": f"Bearer {key}"}
        with connect(ws_url(url), additional_headers=headers) as socket:
            frame = {"type": "response.create", "model": "echo", "input": "hi"}
            assert raw_turn(socket, frame)[-1]["type"] == "response.completed"  # the 2nd
            limited = raw_turn(socket, frame)  # request of the key: the upgrade was the 1st
        assert limited[0]["status"] == 429
        assert limited[0]["error"]["code"] == "rate_limit_exceeded"
        admin = {"authorization": "Bearer admin-key-0123456789abcdef"}
        metrics = httpx.get(f"{url}/metrics", headers=admin).text
        assert 'method="WEBSOCKET",route="/v1/responses",status="429"} 1.0' in metrics


def test_a_socket_turn_records_its_key_and_request_id_and_counts_its_cost(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    """Turns on a socket are billed to its key like any other: a budget stops the next."""
    key = "sk-budget-socket-0123456789"
    admin = {"authorization": "Bearer admin-key-0123456789abcdef"}
    auth = {
        "mode": "keys",
        "admin_key": "admin-key-0123456789abcdef",
        "keys": [{"key": key, "project": "p", "name": "sock", "budget_usd": 0.00001}],
    }
    priced = {
        "provider": "fake-chat",
        "upstream_model": "upstream-chat",
        "pricing": {"input": 1.0, "output": 2.0},
    }
    config = gateway_config(
        fake_upstream[1], tmp_path / "w.db", auth=auth, models={"priced": priced}
    )
    headers = {"authorization": f"Bearer {key}", "x-request-id": "req-socket-1"}
    with serve(create_app(config)) as url:
        with connect(ws_url(url), additional_headers=headers) as socket:
            assert socket.response.headers["x-request-id"] == "req-socket-1"
            frame = {"type": "response.create", "model": "priced", "input": "hi"}
            done = raw_turn(socket, frame)[-1]
            assert done["type"] == "response.completed"
            refused = raw_turn(socket, frame)
        assert refused[0]["status"] == 429
        assert refused[0]["error"]["code"] == "insufficient_quota"
        stored = httpx.get(
            f"{url}/v1/gateway/console/responses/{done['response']['id']}", headers=admin
        ).json()
    assert stored["request_id"] == "req-socket-1"
    assert stored["key_id"] == "static:sock"
