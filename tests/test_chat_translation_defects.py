"""A Chat Completions upstream's answers: every function call, reasoning summaries, long streams."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.responses import ResponseReasoningItem, ResponseStreamEvent

from gateway.upstream.wires.chat.response import ChatTranslator

from .conftest import Gateway
from .fake_upstream import Reply, words
from .test_streaming import raw_events

pytestmark = [pytest.mark.api]

LOOKUP = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Apply a patch."}
THOUGHT = "First the units, then the sum."


def _streamed(gateway: Gateway, **body: Any) -> list[ResponseStreamEvent]:
    return list(gateway.client().responses.create(**body, stream=True))


def _final(events: list[ResponseStreamEvent]) -> Any:
    assert events[-1].type in ("response.completed", "response.incomplete")
    return events[-1].response  # type: ignore[union-attr]


# -- max_tool_calls limits built-in tools' calls, never the model's function calls -------


@pytest.mark.parametrize("stream", [False, True])
def test_max_tool_calls_leaves_every_function_call(gateway: Gateway, stream: bool) -> None:
    calls = [("call_0", "lookup", '{"n": 0}'), ("call_1", "lookup", '{"n": 1}')]
    gateway.fake.script(Reply(tool_calls=calls, finish_reason="tool_calls"))
    body: dict[str, Any] = {
        "model": "chat-model",
        "input": "look both up",
        "tools": [LOOKUP],
        "max_tool_calls": 1,
    }
    if stream:
        events = _streamed(gateway, **body)
        added = [e for e in events if e.type == "response.output_item.added"]
        assert [e.item.call_id for e in added] == ["call_0", "call_1"]  # type: ignore[union-attr]
        done = [e for e in events if e.type == "response.function_call_arguments.done"]
        assert [json.loads(e.arguments) for e in done] == [{"n": 0}, {"n": 1}]  # type: ignore[union-attr]
        response = _final(events)
    else:
        response = gateway.client().responses.create(**body)
    assert [(item.type, item.call_id) for item in response.output] == [
        ("function_call", "call_0"),
        ("function_call", "call_1"),
    ]
    assert response.max_tool_calls == 1
    assert "max_tool_calls" not in gateway.fake.last


@pytest.mark.parametrize("stream", [False, True])
def test_max_tool_calls_leaves_every_custom_tool_call(gateway: Gateway, stream: bool) -> None:
    calls = [(f"call_{n}", "apply_patch", json.dumps({"input": f"patch {n}"})) for n in range(3)]
    gateway.fake.script(Reply(tool_calls=calls, finish_reason="tool_calls"))
    body: dict[str, Any] = {
        "model": "chat-model",
        "input": "patch thrice",
        "tools": [PATCH_TOOL, LOOKUP],
        "max_tool_calls": 2,
    }
    if stream:
        response = _final(_streamed(gateway, **body))
    else:
        response = gateway.client().responses.create(**body)
    assert [(item.type, item.input) for item in response.output] == [
        ("custom_tool_call", f"patch {n}") for n in range(3)
    ]


# -- reasoning text is the summary when the client asks for one ---------------------------


@pytest.mark.parametrize("summary", ["auto", "concise", "detailed"])
def test_asked_for_summary_reasoning_text_is_the_summary(gateway: Gateway, summary: str) -> None:
    gateway.fake.script(Reply(reasoning=THOUGHT, text="42"))
    client = gateway.client()
    first = client.responses.create(
        model="chat-model", input="sum?", reasoning={"effort": "low", "summary": summary}
    )  # type: ignore[call-overload]
    reasoning = first.output[0]
    assert isinstance(reasoning, ResponseReasoningItem)
    assert [(s.type, s.text) for s in reasoning.summary] == [("summary_text", THOUGHT)]
    assert [(c.type, c.text) for c in reasoning.content or []] == [("reasoning_text", THOUGHT)]
    assert client.responses.retrieve(first.id).output[0] == reasoning
    client.responses.create(model="chat-model", input="why?", previous_response_id=first.id)
    assert gateway.fake.last["messages"][1]["reasoning_content"] == THOUGHT  # sent once


@pytest.mark.parametrize("stream", [False, True])
def test_without_summary_asked_the_summary_stays_empty(gateway: Gateway, stream: bool) -> None:
    gateway.fake.script(Reply(reasoning=THOUGHT, text="42"))
    body: dict[str, Any] = {"model": "chat-model", "input": "sum?", "reasoning": {"effort": "low"}}
    if stream:
        events = _streamed(gateway, **body)
        assert not [e for e in events if "reasoning_summary" in e.type]
        response = _final(events)
    else:
        response = gateway.client().responses.create(**body)
    reasoning = response.output[0]
    assert reasoning.summary == [] and reasoning.content[0].text == THOUGHT


@pytest.mark.parametrize("summary", ["auto", "detailed"])
def test_streamed_summary_has_its_own_events(gateway: Gateway, summary: str) -> None:
    gateway.fake.script(Reply(reasoning=THOUGHT, text="42"))
    events = _streamed(
        gateway, model="chat-model", input="sum?", reasoning={"summary": summary}
    )  # strict parsing: every event has the SDK's shape
    final = _final(events)
    item_id = final.output[0].id
    mine = [e for e in events if getattr(e, "item_id", None) == item_id or _item_of(e) == item_id]
    kinds = [e.type for e in mine]
    deltas = kinds.count("response.reasoning_text.delta")
    assert deltas == 3 and kinds.count("response.reasoning_summary_text.delta") == deltas
    assert kinds == [
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning_summary_part.added",
        *["response.reasoning_text.delta", "response.reasoning_summary_text.delta"] * deltas,
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
    ]
    by_kind = {e.type: e for e in mine}
    added = by_kind["response.reasoning_summary_part.added"]
    assert (added.summary_index, added.part.type, added.part.text) == (0, "summary_text", "")  # type: ignore[union-attr]
    summary_deltas = [e for e in mine if e.type == "response.reasoning_summary_text.delta"]
    assert "".join(e.delta for e in summary_deltas) == THOUGHT  # type: ignore[union-attr]
    assert {e.summary_index for e in summary_deltas} == {0}  # type: ignore[union-attr]
    assert by_kind["response.reasoning_summary_text.done"].text == THOUGHT  # type: ignore[union-attr]
    part_done = by_kind["response.reasoning_summary_part.done"]
    assert (part_done.part.text, part_done.status) == (THOUGHT, None)  # type: ignore[union-attr]
    assert by_kind["response.output_item.added"].item.summary == []  # type: ignore[union-attr]
    done_item = by_kind["response.output_item.done"].item  # type: ignore[union-attr]
    assert [s.text for s in done_item.summary] == [THOUGHT]
    assert [c.text for c in done_item.content] == [THOUGHT]
    assert final.output[0].summary[0].text == THOUGHT and final.output_text == "42"


def _item_of(event: ResponseStreamEvent) -> str | None:
    item = getattr(event, "item", None)
    return getattr(item, "id", None)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_reasoning_field_is_the_summary_and_a_cut_one_is_incomplete() -> None:
    translator = ChatTranslator(reasoning_summary=True)
    events = translator.chunk(_chunk({"reasoning": "Half a"}))
    events += translator.chunk(_chunk({"reasoning": " thought"}))
    closing, result = translator.fail("the stream broke")
    [part_done] = [e for e in closing if e["type"] == "response.reasoning_summary_part.done"]
    assert part_done["status"] == "incomplete"
    assert part_done["part"] == {"type": "summary_text", "text": "Half a thought"}
    [item] = result.output
    assert item["summary"] == [{"type": "summary_text", "text": "Half a thought"}]
    assert item["status"] == "incomplete"
    assert [e["delta"] for e in events if e["type"].endswith("summary_text.delta")] == [
        "Half a",
        " thought",
    ]


# -- long streams reassemble exactly (read raw: the SDK's parsing of 20,000 events is slow) --


def test_a_long_stream_with_logprobs_reassembles_exactly(gateway: Gateway) -> None:
    text = " ".join(f"w{n}" for n in range(10_000))
    gateway.fake.script(Reply(text=text))
    body = {
        "model": "chat-model",
        "input": "long",
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 1,
        "stream": True,
    }
    events = raw_events(gateway, body)
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert len(deltas) == 10_000
    assert "".join(e["delta"] for e in deltas) == text
    assert [entry["token"] for e in deltas for entry in e["logprobs"]] == words(text)
    [done] = [e for e in events if e["type"] == "response.output_text.done"]
    assert done["text"] == text
    assert [entry["token"] for entry in done["logprobs"]] == words(text)
    assert events[-1]["type"] == "response.completed"
    part = events[-1]["response"]["output"][0]["content"][0]
    assert part["text"] == text and [entry["token"] for entry in part["logprobs"]] == words(text)


def test_long_reasoning_and_arguments_reassemble_exactly(gateway: Gateway) -> None:
    thought = "".join(f"{n % 10_000:04d}" for n in range(20_000))
    arguments = json.dumps({"query": "".join(f"{n % 1000:03d}," for n in range(20_000))})
    gateway.fake.script(
        Reply(reasoning=thought, tool_calls=[("call_L", "lookup", arguments)], piece_chars=4)
    )
    body = {
        "model": "chat-model",
        "input": "long",
        "tools": [LOOKUP],
        "reasoning": {"summary": "auto"},
        "stream": True,
    }
    events = raw_events(gateway, body)

    def deltas(kind: str) -> list[str]:
        return [e["delta"] for e in events if e["type"] == kind]

    assert len(deltas("response.reasoning_text.delta")) == 20_000
    assert "".join(deltas("response.reasoning_text.delta")) == thought
    assert "".join(deltas("response.reasoning_summary_text.delta")) == thought
    assert len(deltas("response.function_call_arguments.delta")) > 20_000
    assert "".join(deltas("response.function_call_arguments.delta")) == arguments
    assert events[-1]["type"] == "response.completed"
    reasoning, call = events[-1]["response"]["output"]
    assert reasoning["content"][0]["text"] == reasoning["summary"][0]["text"] == thought
    assert call["arguments"] == arguments
