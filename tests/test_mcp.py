"""``mcp`` tools the gateway runs itself, against a real MCP server and the fake model.

The fake Chat Completions model is scripted to call the offered functions; the gateway
lists the server's tools, runs the calls, feeds the results back and answers as OpenAI
does, which the strict ``openai`` SDK checks, streamed and not; approvals as OpenAI has
them. The limits (which servers, failures, time) are in ``test_mcp_limits.py``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config import ProviderSettings
from gateway.upstream.hosted.mcp.history import Names

from .conftest import Gateway
from .fake_upstream import FakeUpstream, Reply
from .mcp_gateway import (
    ROLL,
    SECRET,
    approval,
    call,
    dice_tool,
    mcp_gateway,
    tool_messages,
)
from .mcp_server import McpServer, mcp_server

pytestmark = [pytest.mark.api]


# -- the loop, not streamed ------------------------------------------------------------


def test_a_model_calls_an_mcp_tool_and_answers_with_its_result(
    mcp: Gateway, dice: McpServer
) -> None:
    mcp.fake.script(call(), Reply(text="You rolled a six."))
    response = mcp.client().responses.create(
        model="chat-model", input="Roll a die.", tools=[dice_tool(dice)]
    )
    listed, made, message = response.output
    assert listed.type == "mcp_list_tools" and listed.server_label == "dice"
    assert {tool.name for tool in listed.tools} == {"roll", "boom", "slow", "shout"}
    assert made.type == "mcp_call" and made.name == "roll" and made.server_label == "dice"
    assert made.arguments == '{"sides": 6}' and made.output == "rolled a 6"
    assert made.error is None and made.status == "completed"
    assert message.type == "message" and response.output_text == "You rolled a six."
    assert dice.calls == [("roll", {"sides": 6})]
    first, second = mcp.fake.requests
    offered = {tool["function"]["name"] for tool in first["tools"]}
    assert offered == {ROLL, "mcp__dice__boom", "mcp__dice__slow", "mcp__dice__shout"}
    assert tool_messages(second) == [
        {"role": "tool", "tool_call_id": "c1", "content": "rolled a 6"}
    ]
    assert response.usage is not None and response.usage.input_tokens == 2 * (
        response.usage.input_tokens // 2
    )


def test_usage_adds_up_over_the_model_calls_of_a_turn(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(Reply(text="plain"))
    alone = mcp.client().responses.create(model="chat-model", input="hi")
    mcp.fake.script(call(), Reply(text="plain"))
    looped = mcp.client().responses.create(model="chat-model", input="hi", tools=[dice_tool(dice)])
    assert alone.usage is not None and looped.usage is not None
    assert looped.usage.output_tokens == 2 * alone.usage.output_tokens
    assert looped.usage.total_tokens == looped.usage.input_tokens + looped.usage.output_tokens


def test_the_mcp_tools_never_collide_with_the_clients_own(mcp: Gateway, dice: McpServer) -> None:
    mine = {"type": "function", "name": ROLL, "parameters": {"type": "object"}}
    mcp.fake.script(Reply(text="ok"))
    mcp.client().responses.create(
        model="chat-model", input="hi", tools=[mine, dice_tool(dice, allowed_tools=["roll"])]
    )
    names = [tool["function"]["name"] for tool in mcp.fake.last["tools"]]
    assert names[0] == ROLL and len(names) == 2 and names[1] != ROLL
    assert names[1].startswith("mcp__dice__roll")


def test_allowed_tools_and_the_server_description_reach_the_model(
    mcp: Gateway, dice: McpServer
) -> None:
    tools: list[Any] = [
        dice_tool(dice, allowed_tools=["roll", "boom"], server_description="Fair dice."),
        {
            "type": "mcp",
            "server_label": "loud",
            "server_url": dice.url,
            "require_approval": "never",
            "allowed_tools": {"read_only": True},
        },
    ]
    mcp.fake.script(Reply(text="ok"))
    mcp.client().responses.create(model="chat-model", input="hi", tools=tools)
    offered = {t["function"]["name"]: t["function"] for t in mcp.fake.last["tools"]}
    assert set(offered) == {ROLL, "mcp__dice__boom", "mcp__loud__shout"}
    assert "Fair dice." in offered[ROLL]["description"]
    assert offered[ROLL]["parameters"]["properties"]["sides"]["type"] == "integer"


def test_an_operator_server_is_used_by_its_label_alone(mcp: Gateway, dice: McpServer) -> None:
    tool = {"type": "mcp", "server_label": "house", "require_approval": "never"}
    mcp.fake.script(call("mcp__house__roll"), Reply(text="ok"))
    response = mcp.client().responses.create(model="chat-model", input="roll", tools=[tool])
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert response.output[1].output == "rolled a 6"
    assert "the house dice" in mcp.fake.requests[0]["tools"][0]["function"]["description"]


def test_a_chain_lists_a_server_once(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    mcp.fake.script(call(), Reply(text="one"))
    first = client.responses.create(model="chat-model", input="roll", tools=[dice_tool(dice)])
    mcp.fake.script(call(call_id="c2"), Reply(text="two"))
    second = client.responses.create(
        model="chat-model",
        input="again",
        tools=[dice_tool(dice)],
        previous_response_id=first.id,
    )
    assert [item.type for item in second.output] == ["mcp_call", "message"]
    messages = mcp.fake.requests[2]["messages"]
    earlier = next(m for m in messages if m.get("tool_calls"))["tool_calls"][0]
    assert earlier["function"]["name"] == ROLL and earlier["id"] == first.output[1].id
    assert {"role": "tool", "tool_call_id": first.output[1].id, "content": "rolled a 6"} in messages


def test_a_chain_goes_on_without_the_mcp_tools(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    mcp.fake.script(call(), Reply(text="one"))
    first = client.responses.create(model="chat-model", input="roll", tools=[dice_tool(dice)])
    mcp.fake.script(Reply(text="two"))
    second = client.responses.create(
        model="chat-model", input="and now?", previous_response_id=first.id
    )
    assert second.output_text == "two" and "tools" not in mcp.fake.last
    assert tool_messages(mcp.fake.last) == [
        {"role": "tool", "tool_call_id": first.output[1].id, "content": "rolled a 6"}
    ]


def test_an_older_server_over_sse(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    with (
        mcp_server(sse=True) as old,
        mcp_gateway(fake_upstream, tmp_path, dice, allowed_servers=[old.url]) as gateway,
    ):
        gateway.fake.script(call(), Reply(text="Six."))
        response = gateway.client().responses.create(
            model="chat-model", input="roll", tools=[dice_tool(old)]
        )
        assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
        assert response.output[1].output == "rolled a 6" and old.calls == [("roll", {"sides": 6})]


def test_a_tool_error_becomes_an_mcp_call_error_and_the_model_is_told(
    mcp: Gateway, dice: McpServer
) -> None:
    mcp.fake.script(call("mcp__dice__boom", "{}"), Reply(text="It broke."))
    response = mcp.client().responses.create(
        model="chat-model", input="break it", tools=[dice_tool(dice)]
    )
    made = response.output[1]
    assert made.type == "mcp_call" and made.status == "failed" and made.output is None
    assert made.error is not None and made.error.type == "mcp_tool_execution_error"
    told = tool_messages(mcp.fake.last)[0]["content"]
    assert told.startswith("Error:") and "boom" in told


def test_a_client_function_call_ends_the_turn_after_the_mcp_calls(
    mcp: Gateway, dice: McpServer
) -> None:
    mine = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    mcp.fake.script(
        Reply(
            tool_calls=[("c1", ROLL, '{"sides": 4}'), ("c2", "lookup", "{}")],
            finish_reason="tool_calls",
        )
    )
    response = mcp.client().responses.create(
        model="chat-model", input="both", tools=[mine, dice_tool(dice)]
    )
    assert [item.type for item in response.output] == [
        "mcp_list_tools",
        "mcp_call",
        "function_call",
    ]
    assert response.output[1].output == "rolled a 4" and len(mcp.fake.requests) == 1


def test_headers_reach_the_server_and_nothing_else(
    mcp: Gateway, dice: McpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tool = dice_tool(dice, headers={"X-Api-Key": SECRET}, authorization=SECRET + "-oauth")
    mcp.fake.script(call(), Reply(text="done"))
    client = mcp.client()
    response = client.responses.create(model="chat-model", input="roll", tools=[tool])
    assert all(h.get("x-api-key") == SECRET for h in dice.headers) and dice.headers
    assert dice.headers[0]["authorization"] == f"Bearer {SECRET}-oauth"
    echoed = response.model_dump_json()
    stored = httpx.get(
        f"{mcp.url}/v1/responses/{response.id}", headers={"Authorization": "Bearer k"}
    ).text
    metrics = httpx.get(f"{mcp.url}/metrics").text
    upstream = json.dumps(mcp.fake.requests)
    path = mcp.config.session.sqlite.path
    database = b"".join(p.read_bytes() for p in Path(path).parent.glob(Path(path).name + "*"))
    for place in (echoed, stored, metrics, caplog.text, upstream, database.decode("latin-1")):
        assert SECRET not in place
    assert response.tools[0].type == "mcp" and response.tools[0].server_label == "dice"


# -- streamed ----------------------------------------------------------------------------


def test_a_streamed_turn_emits_openais_mcp_events(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call(arguments='{"sides": 20}'), Reply(text="A twenty."))
    client = mcp.client()
    events = list(
        client.responses.create(
            model="chat-model", input="roll", tools=[dice_tool(dice)], stream=True
        )
    )
    kinds = [event.type for event in events]
    squeezed = [k for n, k in enumerate(kinds) if n == 0 or kinds[n - 1] != k]
    assert squeezed[:12] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.output_item.done",
        "response.output_item.added",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
        "response.output_item.done",
    ]
    assert "response.function_call_arguments.delta" not in kinds
    final = events[-1]
    assert final.type == "response.completed"
    output = final.response.output
    assert [item.type for item in output] == ["mcp_list_tools", "mcp_call", "message"]
    for event in events:
        index = getattr(event, "output_index", None)
        if index is None:
            continue
        item_id = getattr(event, "item_id", None) or event.item.id
        assert output[index].id == item_id, event.type
    arguments = "".join(e.delta for e in events if e.type == "response.mcp_call_arguments.delta")
    assert arguments == '{"sides": 20}' == output[1].arguments
    assert output[1].output == "rolled a 20"
    stored = client.responses.retrieve(final.response.id)
    assert [item.id for item in stored.output] == [item.id for item in output]


def test_the_sdks_stream_helper_builds_the_same_response(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call(), Reply(text="Six."))
    with mcp.client().responses.stream(
        model="chat-model", input="roll", tools=[dice_tool(dice)]
    ) as stream:
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert final.output_text == "Six."


# -- approvals ---------------------------------------------------------------------------


def test_a_call_waits_for_approval_by_default_then_runs_once_approved(
    mcp: Gateway, dice: McpServer
) -> None:
    client = mcp.client()
    tool = {"type": "mcp", "server_label": "dice", "server_url": dice.url}
    mcp.fake.script(call(arguments='{"sides": 8}'))
    asked = client.responses.create(model="chat-model", input="roll", tools=[tool])
    request = asked.output[1]
    assert request.type == "mcp_approval_request" and request.name == "roll"
    assert request.arguments == '{"sides": 8}' and request.server_label == "dice"
    assert dice.calls == [] and len(mcp.fake.requests) == 1
    mcp.fake.script(Reply(text="An eight."))
    approved = client.responses.create(
        model="chat-model",
        input=[approval(request.id, True)],
        tools=[tool],
        previous_response_id=asked.id,
    )
    made, message = approved.output
    assert made.type == "mcp_call" and made.approval_request_id == request.id
    assert made.output == "rolled a 8" and message.content[0].text == "An eight."
    assert dice.calls == [("roll", {"sides": 8})]
    assert tool_messages(mcp.fake.last)[-1]["content"] == "rolled a 8"


def test_a_denied_call_is_told_to_the_model(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    tool = dice_tool(dice, require_approval="always")
    mcp.fake.script(call())
    asked = client.responses.create(model="chat-model", input="roll", tools=[tool])
    mcp.fake.script(Reply(text="As you wish."))
    denied = client.responses.create(
        model="chat-model",
        input=[approval(asked.output[1].id, False, "not now")],
        tools=[tool],
        previous_response_id=asked.id,
    )
    assert [item.type for item in denied.output] == ["message"] and dice.calls == []
    told = tool_messages(mcp.fake.last)[-1]["content"]
    assert "denied" in told and "not now" in told


def test_a_streamed_approval_request(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call())
    with mcp.client().responses.stream(
        model="chat-model", input="roll", tools=[dice_tool(dice, require_approval="always")]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    request = final.output[1]
    assert request.type == "mcp_approval_request" and request.arguments == '{"sides": 6}'
    done = [e for e in events if e.type == "response.output_item.done" and e.output_index == 1]
    assert done[0].item.arguments == '{"sides": 6}' and dice.calls == []
    assert not [e for e in events if e.type.startswith("response.mcp_call")]


def test_an_approval_continues_a_stateless_history(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    tool = dice_tool(dice, require_approval="always")
    mcp.fake.script(call())
    asked = client.responses.create(model="chat-model", input="roll", tools=[tool], store=False)
    history = [{"role": "user", "content": "roll"}]
    history += [item.model_dump(exclude_none=True) for item in asked.output]
    mcp.fake.script(Reply(text="Six."))
    approved = client.responses.create(
        model="chat-model",
        input=[*history, approval(asked.output[1].id, True)],
        tools=[tool],
        store=False,
    )
    assert [item.type for item in approved.output] == ["mcp_call", "message"]
    assert len(mcp.fake.requests) == 2 and dice.calls == [("roll", {"sides": 6})]


def test_per_tool_approval_rules(mcp: Gateway, dice: McpServer) -> None:
    tool = dice_tool(dice, require_approval={"never": {"tool_names": ["roll"]}})
    mcp.fake.script(
        Reply(
            tool_calls=[("c1", ROLL, '{"sides": 6}'), ("c2", "mcp__dice__boom", "{}")],
            finish_reason="tool_calls",
        )
    )
    response = mcp.client().responses.create(model="chat-model", input="go", tools=[tool])
    assert [item.type for item in response.output] == [
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
    ]
    assert dice.calls == [("roll", {"sides": 6})]


def test_an_answer_to_no_request_or_an_answered_one_is_a_400(mcp: Gateway, dice: McpServer) -> None:
    client = mcp.client()
    tool = dice_tool(dice, require_approval="always")
    mcp.fake.script(call())
    asked = client.responses.create(model="chat-model", input="roll", tools=[tool])
    body = {
        "model": "chat-model",
        "tools": [tool],
        "previous_response_id": asked.id,
        "input": [{"role": "user", "content": "hm"}, approval("mcpr_nope", True)],
    }
    unknown = httpx.post(f"{mcp.url}/v1/responses", json=body)
    assert unknown.status_code == 400
    assert unknown.json()["error"]["param"] == "input[1].approval_request_id"
    mcp.fake.script(Reply(text="ok"))
    approved = client.responses.create(
        model="chat-model",
        input=[approval(asked.output[1].id, True)],
        tools=[tool],
        previous_response_id=asked.id,
    )
    body["previous_response_id"] = approved.id
    body["input"] = [approval(asked.output[1].id, True)]
    twice = httpx.post(f"{mcp.url}/v1/responses", json=body)
    assert twice.status_code == 400, twice.text
    assert twice.json()["error"]["param"] == "input[0].approval_request_id"
    assert "answered already" in twice.json()["error"]["message"]
    assert dice.calls == [("roll", {"sides": 6})]


# -- settings and names ----------------------------------------------------------------------


def test_who_runs_mcp_tools_by_default_and_when_told() -> None:
    chat = ProviderSettings(wire_api="chat_completions", base_url="https://x.example/v1")
    responses = ProviderSettings(wire_api="responses", base_url="https://x.example/v1")
    assert chat.mcp_runner() == "gateway" and responses.mcp_runner() == "upstream"
    told = ProviderSettings(wire_api="responses", base_url="https://x.example/v1", mcp="gateway")
    assert told.mcp_runner() == "gateway"


def test_function_names_are_safe_short_and_never_the_clients() -> None:
    names = Names({"mcp__a__b"})
    taken = names.name("a", "b")
    assert (
        taken != "mcp__a__b" and taken.startswith("mcp__a__b") and names.tool(taken) == ("a", "b")
    )
    odd = names.name("my server", "do.it")
    assert odd == "mcp__my_server__do_it"
    long = names.name("l" * 50, "t" * 50)
    assert len(long) <= 64 and long != names.name("l" * 50, "t" * 49)
    assert names.name("a", "b") == taken and names.tool("mcp__nothing") is None
