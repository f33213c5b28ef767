"""Responses <-> Messages API translation, without I/O: what goes upstream for each kind of
input, and what each kind of answer becomes. Every request made here is checked against the
``anthropic`` SDK's own request type, every answer fed in against its response models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message

from gateway.config import Route, parse_config
from gateway.sealing import Sealer
from gateway.upstream.errors import UnsupportedInput
from gateway.upstream.reasoning_state import ReasoningState
from gateway.upstream.wires.anthropic.request import to_messages_request, tool_id
from gateway.upstream.wires.anthropic.response import MessagesTranslator

from .fake_anthropic import FakeAnthropic, check_request, check_stream_event

pytestmark = [pytest.mark.unit]

SEALER = Sealer("a-secret-of-sixteen-or-more")


def route(**model: Any) -> Route:
    config = parse_config(
        {
            "providers": {"claude": {"wire_api": "anthropic", "api_key": "k"}},
            "models": {"claude": {"provider": "claude", "upstream_model": "claude-x", **model}},
        },
        env={},
    )
    found = config.route("claude")
    assert found is not None
    return found


def state(origin: str = "claude/claude-x", project: str = "p") -> ReasoningState:
    return ReasoningState(SEALER, project, origin)


def translate(body: dict[str, Any], *, stream: bool = False, **model: Any) -> dict[str, Any]:
    made = to_messages_request(
        {"model": "claude-x", **body}, route=route(**model), stream=stream, state=state()
    )
    check_request(made.payload)  # the SDK's MessageCreateParams accept it
    return made.payload


def test_instructions_system_items_and_messages() -> None:
    payload = translate(
        {
            "instructions": "Be brief.",
            "input": [
                {"role": "developer", "content": "Use metric units."},
                {"role": "user", "content": "Hi"},
                {"role": "user", "content": [{"type": "input_text", "text": "there"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
                {"role": "user", "content": "Bye"},
            ],
        },
        prompt_cache="off",
    )
    assert payload["system"] == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "Use metric units."},
    ]
    assert payload["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "Bye"}]},
    ]
    assert payload["max_tokens"] == 8192
    assert "temperature" not in payload and "top_p" not in payload


def test_tool_calls_and_results_come_first_in_the_next_user_message() -> None:
    payload = translate(
        {
            "input": [
                {"role": "user", "content": "weather?"},
                {"type": "function_call", "call_id": "call|1", "name": "w", "arguments": '{"c":1}'},
                {"type": "function_call", "call_id": "call_2", "name": "w", "arguments": "{}"},
                {"role": "user", "content": "and hurry"},
                {"type": "function_call_output", "call_id": "call|1", "output": "sunny"},
                {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
            ],
            "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}}],
            "parallel_tool_calls": False,
        },
        prompt_cache="off",
    )
    first_id = tool_id("call|1")
    assert first_id != "call|1" and first_id == tool_id("call|1")
    assistant, user = payload["messages"][1:]
    assert [b["id"] for b in assistant["content"]] == [first_id, "call_2"]
    assert [b["type"] for b in user["content"]] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in user["content"][:2]] == [first_id, "call_2"]
    assert payload["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert payload["tools"] == [{"name": "w", "input_schema": {"type": "object"}}]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"type": "function", "name": "w"}, {"type": "tool", "name": "w"}),
    ],
)
def test_tool_choice(choice: Any, sent: dict[str, Any]) -> None:
    tools = [{"type": "function", "name": "w", "parameters": {"type": "object"}}]
    payload = translate({"input": "x", "tools": tools, "tool_choice": choice})
    assert payload["tool_choice"] == sent


def test_custom_and_namespaced_tools_are_tools_of_flat_names() -> None:
    tools = [
        {"type": "custom", "name": "apply_patch", "description": "Patch files."},
        {"type": "namespace", "name": "fs", "tools": [{"type": "function", "name": "read"}]},
        {"type": "web_search"},
    ]
    payload = translate({"input": "x", "tools": tools}, prompt_cache="off")
    assert [t["name"] for t in payload["tools"]] == ["apply_patch", "fs__read"]
    assert payload["tools"][0]["input_schema"]["required"] == ["input"]


def test_reasoning_effort_sets_a_thinking_budget_below_max_tokens() -> None:
    payload = translate({"input": "x", "reasoning": {"effort": "high"}, "max_output_tokens": 4000})
    assert payload["thinking"] == {"type": "enabled", "budget_tokens": 3999}
    assert payload["max_tokens"] == 4000
    too_small = translate({"input": "x", "reasoning": {"effort": "low"}, "max_output_tokens": 500})
    assert "thinking" not in too_small
    adaptive = translate(
        {"input": "x", "reasoning": {"effort": "medium"}}, thinking={"mode": "adaptive"}
    )
    assert adaptive["thinking"] == {"type": "adaptive"}
    assert adaptive["output_config"] == {"effort": "medium"}
    assert "thinking" not in translate({"input": "x", "reasoning": {"effort": "none"}})


def test_a_forced_tool_choice_turns_thinking_off() -> None:
    tools = [{"type": "function", "name": "w", "parameters": {"type": "object"}}]
    payload = translate(
        {"input": "x", "tools": tools, "tool_choice": "required", "reasoning": {"effort": "low"}}
    )
    assert "thinking" not in payload and payload["tool_choice"] == {"type": "any"}


def sealed_reasoning(
    blocks: list[dict[str, Any]], origin: str = "claude/claude-x"
) -> dict[str, Any]:
    token = state(origin).seal({"blocks": blocks})
    return {"type": "reasoning", "summary": [], "encrypted_content": token}


THOUGHT = {"type": "thinking", "thinking": "Let me see.", "signature": "sig=="}


def test_thinking_blocks_go_back_first_in_their_turn_to_the_same_model_only() -> None:
    items = [
        {"role": "user", "content": "weather?"},
        sealed_reasoning([THOUGHT]),
        sealed_reasoning([{"type": "redacted_thinking", "data": "opaque"}]),
        {"type": "function_call", "call_id": "call_1", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    tools = [{"type": "function", "name": "w", "parameters": {"type": "object"}}]
    body = {"input": items, "tools": tools, "reasoning": {"effort": "low"}}
    payload = translate(body, prompt_cache="off")
    assert payload["messages"][1]["content"] == [
        THOUGHT,
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "call_1", "name": "w", "input": {}},
    ]
    assert payload["thinking"]["type"] == "enabled"
    # The same items for another model: its signatures are never sent, nor is thinking
    # turned on for a tool-use turn that cannot start with a thinking block.
    other = [sealed_reasoning([THOUGHT], origin="claude/another"), *items[3:]]
    payload = translate({**body, "input": [items[0], *other]}, prompt_cache="off")
    assert [b["type"] for b in payload["messages"][1]["content"]] == ["tool_use"]
    assert "thinking" not in payload


def test_images_and_pdfs_become_blocks_and_file_ids_are_refused() -> None:
    content = [
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "input_image", "image_url": "https://example.com/cat.jpg"},
        {
            "type": "input_file",
            "filename": "a.pdf",
            "file_data": "data:application/pdf;base64,JVBERi0=",
        },
    ]
    payload = translate({"input": [{"role": "user", "content": content}]}, prompt_cache="off")
    blocks = payload["messages"][0]["content"]
    assert blocks[0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }
    assert blocks[1]["source"] == {"type": "url", "url": "https://example.com/cat.jpg"}
    assert blocks[2]["type"] == "document" and blocks[2]["title"] == "a.pdf"
    with pytest.raises(UnsupportedInput) as refused:
        translate(
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]}
        )
    assert refused.value.param == "input[0].content[0]"


def test_cache_breakpoints_mark_tools_system_and_the_previous_and_current_context_ends() -> None:
    items = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "three"},
    ]
    tools = [{"type": "function", "name": "w", "parameters": {"type": "object"}}]
    payload = translate({"instructions": "sys", "input": items, "tools": tools})
    marked = [
        payload["tools"][-1],
        payload["system"][-1],
        payload["messages"][0]["content"][-1],
        payload["messages"][2]["content"][-1],
    ]
    assert all(block.get("cache_control") == {"type": "ephemeral"} for block in marked)
    assert json.dumps(payload).count("cache_control") == 4
    off = translate({"instructions": "sys", "input": items, "tools": tools}, prompt_cache="off")
    assert "cache_control" not in json.dumps(off)


# -- answers -------------------------------------------------------------------------------


def translated_stream(events: list[dict[str, Any]], summary: bool = False) -> Any:
    translator = MessagesTranslator(state(), reasoning_summary=summary)
    out: list[dict[str, Any]] = []
    for event in events:
        check_stream_event(event)
        out += translator.event(event)
    closing, result = translator.finish()
    return [*out, *closing], result


def test_a_streamed_answer_with_thinking_and_parallel_tool_calls() -> None:
    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_a", "name": "w", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_b", "name": "w", "input": {"city": "Rome"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
            },
        }
    ).model_dump(exclude_none=True)
    events, result = translated_stream(FakeAnthropic.events(message, interleave=True), summary=True)
    assert result.status == "completed"
    reasoning, first, second = result.output
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "Two cities."}]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Two cities."}]
    assert state().open(reasoning["encrypted_content"]) == {
        "blocks": [{"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"}]
    }
    assert state("claude/other").open(reasoning["encrypted_content"]) is None
    assert state(project="q").open(reasoning["encrypted_content"]) is None
    assert (first["call_id"], json.loads(first["arguments"])) == ("toolu_a", {"city": "Oslo"})
    assert (second["call_id"], json.loads(second["arguments"])) == ("toolu_b", {"city": "Rome"})
    assert result.usage["input_tokens"] == 130
    assert result.usage["input_tokens_details"] == {"cached_tokens": 100, "cache_write_tokens": 20}
    assert result.usage["output_tokens"] == 5
    kinds = [e["type"] for e in events]
    assert kinds.count("response.output_item.added") == 3
    assert kinds.count("response.function_call_arguments.done") == 2


def translated_message(stop_reason: str, text: str) -> Any:
    """The result of a whole answer of ``text`` that stopped for ``stop_reason``."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    Message.model_validate(message)
    translator = MessagesTranslator(state())
    translator.message(message)
    return translator.finish()[1]


@pytest.mark.parametrize(
    ("stop_reason", "status", "details"),
    [
        ("end_turn", "completed", None),
        ("stop_sequence", "completed", None),
        ("pause_turn", "completed", None),
        ("max_tokens", "incomplete", {"reason": "max_output_tokens"}),
        ("refusal", "incomplete", {"reason": "content_filter"}),
    ],
)
def test_stop_reasons(stop_reason: str, status: str, details: Any) -> None:
    result = translated_message(stop_reason, "Hi")
    assert (result.status, result.incomplete_details, result.output_text) == (status, details, "Hi")


def test_running_out_of_context_window_takes_the_context_length_path() -> None:
    result = translated_message("model_context_window_exceeded", "Partial")
    assert result.status == "failed"
    assert result.error is not None and result.error["code"] == "context_length_exceeded"


def test_sampling_drop_sends_neither_temperature_nor_top_p() -> None:
    body = {"input": "Hi", "temperature": 0.3, "top_p": 0.5}
    assert translate(body)["temperature"] == 0.3
    dropped = translate(body, sampling="drop")
    assert "temperature" not in dropped and "top_p" not in dropped
