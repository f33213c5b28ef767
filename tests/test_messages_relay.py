"""The Messages stream of a turn: Claude's own events relayed, a fallback's translated, and a
failure told with the error type it has."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.api.messages import MessagesStream, RelayedStream, ThinkingSeals
from gateway.api.messages.stream import stream_error_type
from gateway.sealing import Sealer
from gateway.upstream.wires.anthropic.passthrough import RAW_EVENT, upstream_body

pytestmark = [pytest.mark.unit]

CREATED = {"type": "response.created", "response": {"id": "resp_1"}}


def _stream() -> RelayedStream:
    seals = ThinkingSeals(Sealer("s" * 32), "p", "claude", ["claude/x"])
    return RelayedStream("claude", MessagesStream("claude", seals))


def _failed(code: str, message: str) -> dict[str, Any]:
    error = {"code": code, "message": message}
    return {"type": "response.failed", "response": {"id": "resp_1", "error": error}}


@pytest.mark.parametrize(
    ("code", "message", "kind"),
    [
        ("rate_limit_exceeded", "slow down", "rate_limit_error"),
        ("context_length_exceeded", "too long", "invalid_request_error"),
        ("invalid_prompt", "no", "invalid_request_error"),
        ("server_error", "The upstream provider 'c' is overloaded; try again", "overloaded_error"),
        ("server_error", "The response broke off.", "api_error"),
    ],
)
def test_a_failure_has_its_error_type(code: str, message: str, kind: str) -> None:
    assert stream_error_type({"code": code, "message": message}) == kind


def test_claudes_events_go_as_they_came_and_a_cut_closes_the_open_block() -> None:
    stream = _stream()
    assert stream.event(CREATED) == []  # Claude's own message_start is awaited
    start = {"type": "message_start", "message": {"id": "msg_x", "model": "claude-5"}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
    made = stream.event({"type": RAW_EVENT, "event": start})
    made += stream.event({"type": RAW_EVENT, "event": block})
    made += stream.event({"type": "response.output_text.delta", "delta": "x"})  # read, not sent
    made += stream.event(_failed("rate_limit_exceeded", "slow down"))
    assert made == [
        ("message_start", {"type": "message_start", "message": {"id": "msg_x", "model": "claude"}}),
        ("content_block_start", block),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("error", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    ]


def test_claudes_own_error_is_not_doubled() -> None:
    stream = _stream()
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert stream.event({"type": RAW_EVENT, "event": error}) == [("error", error)]
    assert stream.event(_failed("server_error", "overloaded")) == []


def test_a_fallbacks_turn_is_translated() -> None:
    stream = _stream()
    assert stream.event(CREATED) == []
    made = stream.event({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"})
    assert [kind for kind, _ in made] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
    ]


def test_the_body_keeps_everything_but_another_models_thinking() -> None:
    sent = {
        "body": {
            "model": "claude",
            "max_tokens": 9,
            "top_k": 3,
            "stream": True,
            "messages": [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": "gwt1.abc"},
                        {"type": "thinking", "thinking": "u", "signature": "claudes"},
                    ],
                },
                {"role": "assistant", "content": [{"type": "thinking", "signature": "gwt1.x"}]},
            ],
        },
        "beta": None,
    }
    body = upstream_body(sent, "claude-5", stream=False)
    assert body == {
        "model": "claude-5",
        "max_tokens": 9,
        "top_k": 3,
        "messages": [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "u", "signature": "claudes"}],
            },
        ],
    }
