"""Where the gateway's MCP tools stop: servers off the list or at private addresses,
servers down, slow or redirecting, bad tools and items, time limits and ``max_tool_calls``;
background, WebSocket and cancelled turns; the Anthropic wire.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gateway import create_app, parse_config

from .conftest import Gateway
from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import FakeUpstream, Reply
from .mcp_gateway import (
    ROLL,
    SECRET,
    approval,
    call,
    dice_tool,
    error_of,
    finished,
    mcp_gateway,
    tool_messages,
)
from .mcp_server import McpServer
from .servers import raw_server, refusing_url, serve

pytestmark = [pytest.mark.api]


# -- which servers -----------------------------------------------------------------------


def test_a_server_off_the_list_is_a_400(mcp: Gateway, dice: McpServer) -> None:
    tools = [{"type": "function", "name": "f"}, dice_tool(dice, server_url=dice.url + "-other")]
    body = {"model": "chat-model", "input": "hi", "tools": tools}
    for stream in (False, True):
        answer = httpx.post(f"{mcp.url}/v1/responses", json={**body, "stream": stream})
        assert answer.status_code == 400
        assert error_of(answer)["param"] == "tools[1].server_url"
    assert mcp.fake.requests == [] and dice.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/mcp",
        "http://localhost:9/mcp",
        "http://10.1.2.3/mcp",
        "http://169.254.169.254/latest",
        "http://[::1]:9/mcp",
        "http://192.168.0.1/mcp",
        "http://[::127.0.0.1]:9/mcp",  # IPv6 forms that carry 127.0.0.1
        "http://[::ffff:0:127.0.0.1]:9/mcp",
        "http://[64:ff9b::127.0.0.1]:9/mcp",
        "http://[2002:7f00:1::]:9/mcp",
        "http://127.0.0.1:99999/mcp",  # not an address at all
    ],
)
def test_a_private_address_is_refused_without_an_allow_list(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer, url: str
) -> None:
    with mcp_gateway(fake_upstream, tmp_path, dice, allowed_servers=None) as gateway:
        body = {"model": "chat-model", "input": "hi", "tools": [dice_tool(dice, server_url=url)]}
        answer = httpx.post(f"{gateway.url}/v1/responses", json=body)
        assert answer.status_code == 400, answer.text
        assert error_of(answer)["param"] == "tools[0].server_url"
        assert gateway.fake.requests == []


def test_a_redirect_off_the_servers_host_is_not_followed(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    elsewhere = dice.url.replace("127.0.0.1", "localhost")

    async def moved(request: Request) -> Response:
        return RedirectResponse(elsewhere, status_code=307)

    redirecting = Starlette(routes=[Route("/mcp", moved, methods=["GET", "POST", "DELETE"])])
    with (
        serve(redirecting) as base,
        mcp_gateway(fake_upstream, tmp_path, dice, allowed_servers=[f"{base}/mcp"]) as gateway,
    ):
        body = {
            "model": "chat-model",
            "input": "hi",
            "tools": [dice_tool(dice, server_url=f"{base}/mcp")],
        }
        answer = httpx.post(f"{gateway.url}/v1/responses", json=body)
        assert answer.status_code == 424, answer.text
        assert dice.headers == [] and gateway.fake.requests == []


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"server_label": 7}, "tools[0].server_label"),
        ({"server_label": ""}, "tools[0].server_label"),
        ({"server_url": None, "server_label": "unknown"}, "tools[0].server_url"),
        ({"server_url": "ftp://x/mcp"}, "tools[0].server_url"),
        ({"headers": {"a": 1}}, "tools[0].headers"),
        ({"allowed_tools": "roll"}, "tools[0].allowed_tools"),
        ({"allowed_tools": {"tool_names": [1]}}, "tools[0].allowed_tools.tool_names"),
        ({"require_approval": "sometimes"}, "tools[0].require_approval"),
        ({"require_approval": {"never": "roll"}}, "tools[0].require_approval.never"),
        ({"require_approval": {"always": {"tool_names": "x"}}}, "tools[0].require_approval.always"),
        ({"server_description": ["x"]}, "tools[0].server_description"),
    ],
)
def test_a_malformed_mcp_tool_is_a_400(
    mcp: Gateway, dice: McpServer, fields: dict[str, Any], param: str
) -> None:
    body = {"model": "chat-model", "input": "hi", "tools": [dice_tool(dice, **fields)]}
    answer = httpx.post(f"{mcp.url}/v1/responses", json=body)
    assert answer.status_code == 400, answer.text
    assert error_of(answer)["param"] == param and mcp.fake.requests == []


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "mcp", "server_label": "zz", "name": "add"},
        {"type": "mcp", "server_label": "zz"},
        {"type": "mcp", "server_label": "dice", "name": 7},
    ],
)
def test_a_tool_choice_naming_no_mcp_tool_of_the_request_is_a_400(
    mcp: Gateway, dice: McpServer, choice: dict[str, Any]
) -> None:
    for tools in ([dice_tool(dice)], [{"type": "function", "name": "f"}], []):
        for stream in (False, True):
            body = {
                "model": "chat-model",
                "input": "hi",
                "tools": tools,
                "tool_choice": choice,
                "stream": stream,
            }
            answer = httpx.post(f"{mcp.url}/v1/responses", json=body)
            assert answer.status_code == 400, (tools, stream, answer.text)
            assert error_of(answer)["type"] == "invalid_request_error"
            assert error_of(answer)["param"].startswith("tool_choice")
    assert mcp.fake.requests == [] and dice.headers == []


def test_a_tool_choice_naming_a_tool_the_server_lacks_is_a_400(
    mcp: Gateway, dice: McpServer
) -> None:
    choice = {"type": "mcp", "server_label": "dice", "name": "add"}
    body = {"model": "chat-model", "input": "hi", "tools": [dice_tool(dice)], "tool_choice": choice}
    answer = httpx.post(f"{mcp.url}/v1/responses", json=body)
    assert answer.status_code == 400, answer.text
    assert error_of(answer)["param"] == "tool_choice"
    assert "add" in error_of(answer)["message"]
    offered_elsewhere = {**body, "tools": [dice_tool(dice, allowed_tools=["shout"])]}
    choice_of_roll = {**choice, "name": "roll"}
    answer = httpx.post(
        f"{mcp.url}/v1/responses", json={**offered_elsewhere, "tool_choice": choice_of_roll}
    )
    assert answer.status_code == 400 and error_of(answer)["param"] == "tool_choice"
    with httpx.stream("POST", f"{mcp.url}/v1/responses", json={**body, "stream": True}) as streamed:
        events = [line for line in streamed.iter_lines() if line.startswith("event: ")]
    assert events[-1] == "event: response.failed"
    assert mcp.fake.requests == []
    mcp.fake.script(call(), Reply(text="Six."))
    answer = httpx.post(f"{mcp.url}/v1/responses", json={**body, "tool_choice": choice_of_roll})
    assert answer.status_code == 200, answer.text
    assert mcp.fake.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": ROLL},
    }


def test_odd_mcp_items_in_the_input_never_break_a_turn(mcp: Gateway, dice: McpServer) -> None:
    odd: list[Any] = [
        {"type": "mcp_list_tools", "server_label": "dice", "tools": [1, {"name": 5}, "x"]},
        {"type": "mcp_call", "server_label": {"a": 1}, "name": None, "error": ["?"]},
        {"type": "mcp_approval_request", "id": 3, "name": "roll"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_x", "approve": "yes"},
    ]
    for items in ([odd[0], odd[1], odd[2]], [odd[0], odd[3]], [odd[1]]):
        mcp.fake.script(Reply(text="fine"))
        body = {"model": "chat-model", "input": items, "tools": [dice_tool(dice)]}
        answer = httpx.post(f"{mcp.url}/v1/responses", json=body)
        assert answer.status_code in (200, 400), answer.text


def test_a_responses_upstream_runs_mcp_itself_and_storage_keeps_no_headers(
    mcp: Gateway, dice: McpServer
) -> None:
    tool = dice_tool(dice, headers={"X-Api-Key": SECRET})
    client = mcp.client()
    response = client.responses.create(model="resp-model", input="hi", tools=[tool])
    assert mcp.fake.last["tools"] == [tool] and dice.calls == []
    assert SECRET not in client.responses.retrieve(response.id).model_dump_json()


# -- failures ----------------------------------------------------------------------------


def test_a_server_that_is_down_fails_the_listing_as_openai_does(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with refusing_url() as down:
        url = f"{down}/mcp"
        with mcp_gateway(fake_upstream, tmp_path, dice, allowed_servers=[url]) as gateway:
            tool = dice_tool(dice, server_url=url, server_label="gone")
            body = {"model": "chat-model", "input": "hi", "tools": [tool]}
            answer = httpx.post(f"{gateway.url}/v1/responses", json=body)
            assert answer.status_code == 424
            error = error_of(answer)
            assert error["type"] == "external_connector_error" and error["param"] == "tools"
            assert error["message"].startswith(
                "Error retrieving tool list from MCP server: 'gone'."
            )
            events = list(
                gateway.client().responses.create(
                    model="chat-model", input="hi", tools=[tool], stream=True
                )
            )
            kinds = [event.type for event in events]
            assert "response.mcp_list_tools.failed" in kinds and kinds[-1] == "response.failed"
            listed = events[-1].response.output[0]
            assert listed.type == "mcp_list_tools" and "'gone'" in (listed.error or "")
            assert gateway.fake.requests == []


def test_a_server_that_never_answers_fails_the_listing_in_time(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        await asyncio.sleep(60)

    with raw_server(silent) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with mcp_gateway(
            fake_upstream, tmp_path, dice, allowed_servers=[url], connect_timeout_seconds=0.5
        ) as gateway:
            body = {
                "model": "chat-model",
                "input": "hi",
                "tools": [dice_tool(dice, server_url=url)],
            }
            answer = httpx.post(f"{gateway.url}/v1/responses", json=body, timeout=30)
            assert answer.status_code == 424
            assert "did not answer within 0.5 seconds" in error_of(answer)["message"]


def test_a_call_that_times_out_becomes_an_error_and_nothing_hangs(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with mcp_gateway(fake_upstream, tmp_path, dice, call_timeout_seconds=0.5) as gateway:
        gateway.fake.script(call("mcp__dice__slow", "{}"), Reply(text="Too slow."))
        response = gateway.client().responses.create(
            model="chat-model", input="wait", tools=[dice_tool(dice)]
        )
        made = response.output[1]
        assert made.status == "failed" and made.error is not None
        assert made.error.type == "mcp_protocol_error" and "0.5 seconds" in made.error.message
        assert response.output_text == "Too slow."
        assert "did not answer" in tool_messages(gateway.fake.last)[0]["content"]
        dice.release.set()


def test_the_turns_time_limit_ends_it(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with mcp_gateway(fake_upstream, tmp_path, dice, max_turn_seconds=0.5) as gateway:
        gateway.fake.script(call("mcp__dice__slow", "{}"), Reply(text="never sent"))
        answer = httpx.post(
            f"{gateway.url}/v1/responses",
            json={"model": "chat-model", "input": "wait", "tools": [dice_tool(dice)]},
            timeout=30,
        )
        assert answer.status_code == 502
        assert "took over 0.5 seconds" in error_of(answer)["message"]
        assert len(gateway.fake.requests) == 1
        dice.release.set()


def test_bad_arguments_are_an_error_the_model_is_told(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call(arguments="{not json"), Reply(text="Oops."))
    response = mcp.client().responses.create(
        model="chat-model", input="roll", tools=[dice_tool(dice)]
    )
    assert response.output[1].error is not None and dice.calls == []
    assert response.output[1].error.type == "mcp_protocol_error"


def test_max_tool_calls_stops_a_model_that_calls_forever(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(*[call(call_id=f"c{n}") for n in range(6)])
    response = mcp.client().responses.create(
        model="chat-model", input="roll forever", tools=[dice_tool(dice)], max_tool_calls=2
    )
    # OpenAI: "Any further attempts to call a tool by the model will be ignored."
    kinds = [item.type for item in response.output]
    assert kinds == ["mcp_list_tools", "mcp_call", "mcp_call"]
    assert [item.status for item in response.output[1:]] == ["completed", "completed"]
    assert len(dice.calls) == 2 and len(mcp.fake.requests) == 3
    assert "tools" not in mcp.fake.last
    assert response.status == "completed"


def test_calls_past_max_tool_calls_are_left_out_streamed_or_not(
    mcp: Gateway, dice: McpServer
) -> None:
    """Three calls at once with room for two: the third is not run, not shown, and not
    read back to the model; the model then answers without the tools."""
    client = mcp.client()
    three = Reply(
        tool_calls=[(f"c{n}", ROLL, '{"sides": 6}') for n in range(3)], finish_reason="tool_calls"
    )
    for stream in (False, True):
        mcp.fake.reset()
        dice.calls.clear()
        mcp.fake.script(three, Reply(text="Twelve."))
        fields: dict[str, Any] = {
            "model": "chat-model",
            "input": "roll thrice",
            "tools": [dice_tool(dice)],
            "max_tool_calls": 2,
        }
        if stream:
            with client.responses.stream(**fields) as events:
                seen = list(events)
                response = events.get_final_response()
            added = [e.output_index for e in seen if e.type == "response.output_item.added"]
            assert added == [0, 1, 2, 3]
        else:
            response = client.responses.create(**fields)
        kinds = [item.type for item in response.output]
        assert kinds == ["mcp_list_tools", "mcp_call", "mcp_call", "message"], stream
        assert len(dice.calls) == 2
        assert [m["tool_call_id"] for m in tool_messages(mcp.fake.last)] == ["c0", "c1"]
        messages = mcp.fake.last["messages"]
        called = [c["id"] for m in messages if m.get("tool_calls") for c in m["tool_calls"]]
        assert called == ["c0", "c1"]


# -- background, WebSocket, cancel -----------------------------------------------------------


def test_a_background_turn_runs_mcp_tools(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    mcp.fake.script(call(), Reply(text="Six."))
    started = client.responses.create(
        model="chat-model", input="roll", tools=[dice_tool(dice)], background=True
    )
    done = finished(client, started.id)
    assert done.status == "completed" and done.output_text == "Six."
    assert [item.type for item in done.output] == ["mcp_list_tools", "mcp_call", "message"]


def test_a_background_turn_whose_server_is_down_is_stored_failed(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with (
        refusing_url() as down,
        mcp_gateway(fake_upstream, tmp_path, dice, allowed_servers=[f"{down}/mcp"]) as gateway,
    ):
        client = gateway.client()
        tool = dice_tool(dice, server_url=f"{down}/mcp")
        started = client.responses.create(
            model="chat-model", input="roll", tools=[tool], background=True
        )
        done = finished(client, started.id)
        assert done.status == "failed" and done.error is not None
        assert "Error retrieving tool list from MCP server: 'dice'" in done.error.message
        body = {
            "model": "chat-model",
            "background": True,
            "tools": [dice_tool(dice)],
            "input": [approval("mcpr_nope", True)],
        }
        refused = httpx.post(f"{gateway.url}/v1/responses", json=body)
        assert refused.status_code == 400 and gateway.stored_rows() == 1


def test_cancel_stops_a_call_in_flight(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with mcp_gateway(fake_upstream, tmp_path, dice, call_timeout_seconds=60) as gateway:
        client = gateway.client()
        gateway.fake.script(call("mcp__dice__slow", '{"seconds": 60}'), Reply(text="late"))
        started = client.responses.create(
            model="chat-model", input="wait", tools=[dice_tool(dice)], background=True
        )
        for _ in range(600):
            if dice.calls:
                break
            threading.Event().wait(0.05)
        assert dice.calls == [("slow", {"seconds": 60})]
        cancelled = client.responses.cancel(started.id)
        assert cancelled.status == "cancelled"
        assert finished(client, started.id).status == "cancelled"
        assert len(gateway.fake.requests) == 1  # the model was not called again
        dice.release.set()


def test_a_websocket_turn_runs_mcp_tools(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call(), Reply(text="Six."))
    with mcp.client().responses.connect() as connection:
        connection.response.create(model="chat-model", input="roll", tools=[dice_tool(dice)])
        events = []
        for event in connection:
            events.append(event)
            if event.type in ("response.completed", "response.failed", "error"):
                break
    assert events[-1].type == "response.completed"
    assert "response.mcp_call.completed" in [event.type for event in events]
    assert events[-1].response.output_text == "Six."


# -- the Anthropic wire ------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_claude_runs_mcp_tools_and_the_chain_goes_on(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer, stream: bool
) -> None:
    claude = FakeAnthropic()
    with serve(claude.app) as claude_url:
        raw = {
            "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
            "providers": {
                "claude": {
                    "wire_api": "anthropic",
                    "base_url": claude_url,
                    "api_key": ANTHROPIC_KEY,
                }
            },
            "models": {"claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"}},
            "mcp": {"allowed_servers": [dice.url]},
        }
        with serve(create_app(parse_config(raw, env={}))) as gateway_url:
            client = Gateway(gateway_url, parse_config(raw, env={}), fake_upstream[0]).client()
            claude.script(
                AnthropicReply(thinking="Roll it.", tool_uses=[("toolu_1", ROLL, {"sides": 10})]),
                AnthropicReply(text="A ten."),
                AnthropicReply(text="Still a ten."),
            )
            tools: Any = [dice_tool(dice)]
            first: Any
            if stream:
                with client.responses.stream(model="claude", input="roll", tools=tools) as events:
                    first = events.get_final_response()
            else:
                first = client.responses.create(model="claude", input="roll", tools=tools)
            kinds = [item.type for item in first.output]
            assert kinds == ["mcp_list_tools", "reasoning", "mcp_call", "message"]
            assert first.output[2].output == "rolled a 10"
            again = client.responses.create(
                model="claude", input="and?", tools=tools, previous_response_id=first.id
            )
            assert again.output_text == "Still a ten."
            client.close()
    results = [
        block
        for message in claude.last["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "tool_result"
    ]
    assert [block["content"] for block in results] == ["rolled a 10"]
