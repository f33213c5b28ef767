"""Stored agent messages into Chat Completions and Anthropic Messages inputs."""

from __future__ import annotations

from typing import Any

import pytest

from session.agent_store import Message, to_anthropic_messages, to_openai_input

pytestmark = [pytest.mark.unit]


def message(payload: Any, role: str | None = None, type: str | None = None) -> Message:
    return Message("m", "c", 1, role, type, payload, {}, 0.0, 0.0)


CONVERSATION = [
    message("Be brief.", "system"),
    message("What is the weather in Oslo?", "user"),
    message([{"type": "input_text", "text": "And in Bergen?"}], "user"),
    message(
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "weather",
            "arguments": '{"city": "Oslo"}',
        }
    ),
    message({"type": "function_call_output", "call_id": "c1", "output": "4 °C"}),
    message({"role": "assistant", "content": "It is 4 °C in Oslo."}),
]


def test_chat_completions_messages() -> None:
    assert to_openai_input(CONVERSATION) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "user", "content": [{"type": "text", "text": "And in Bergen?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4 °C"},
        {"role": "assistant", "content": "It is 4 °C in Oslo."},
    ]


def test_anthropic_messages_alternate_with_the_system_lifted_out() -> None:
    converted = to_anthropic_messages(CONVERSATION)
    assert converted["system"] == "Be brief."
    assert [turn["role"] for turn in converted["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    user, call, result, answer = converted["messages"]
    assert [block["text"] for block in user["content"]] == [
        "What is the weather in Oslo?",
        "And in Bergen?",
    ]
    assert call["content"] == [
        {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}
    ]
    assert result["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "4 °C"}]
    assert answer["content"] == [{"type": "text", "text": "It is 4 °C in Oslo."}]


def test_other_payloads_are_sent_as_json() -> None:
    assert to_openai_input([message({"kind": "note", "n": 1}, "user")]) == [
        {"role": "user", "content": '{"kind": "note", "n": 1}'}
    ]
