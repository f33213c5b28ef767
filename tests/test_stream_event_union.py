"""Every event type of the SDK's ``ResponseStreamEvent`` union is one the gateway makes or
relays: a Responses upstream's own events come through unchanged but for the gateway's item
ids and sequence numbers, and the strict SDK parses them."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from openai.types.responses import ResponseStreamEvent

from .conftest import Gateway
from .fake_upstream import Reply

pytestmark = [pytest.mark.api]

# Events only the gateway makes for its own responses (lifecycle, ends, errors).
MADE_HERE = {
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
}
MESSAGE = "msg_upstream_1"
# One event of each kind a Responses upstream streams about its items, as it sends them.
RELAYED: list[dict[str, Any]] = [
    {
        "type": "response.output_text.annotation.added",
        "item_id": MESSAGE,
        "output_index": 0,
        "content_index": 0,
        "annotation_index": 0,
        "annotation": {"type": "url_citation", "url": "https://example.com", "title": "Ex"}
        | {"start_index": 0, "end_index": 4},
    },
    {"type": "response.refusal.delta", "item_id": MESSAGE, "output_index": 0}
    | {"content_index": 0, "delta": "No"},
    {"type": "response.compaction.compacting", "output_index": 0, "item_id": MESSAGE},
    {"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 1},
    {"type": "response.mcp_call.in_progress", "item_id": "mcp_1", "output_index": 1},
    {"type": "response.image_generation_call.partial_image", "item_id": "ig_1"}
    | {"output_index": 1, "partial_image_index": 0, "partial_image_b64": "aGk="},
    {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "output_index": 1}
    | {"delta": "x"},
    {"type": "response.shell_call_command.delta", "item_id": "sh_1", "output_index": 1}
    | {"command_index": 0, "delta": "ls"},
    {"type": "response.shell_call_output_content.delta", "item_id": "sh_1", "output_index": 1}
    | {"command_index": 0, "delta": {"stdout": "a.txt"}},
    {"type": "response.shell_call_output_content.done", "item_id": "sh_1", "output_index": 1}
    | {
        "command_index": 0,
        "output": [
            {"outcome": {"type": "exit", "exit_code": 0}} | {"stdout": "a.txt", "stderr": ""}
        ],
    },
    {"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 1}
    | {"summary_index": 0, "part": {"type": "summary_text", "text": ""}},
    {"type": "response.reasoning_summary_part.done", "item_id": "rs_1", "output_index": 1}
    | {"summary_index": 0, "part": {"type": "summary_text", "text": "Thought."}},
    # the response's own audio, about no one item
    {"type": "response.audio.delta", "delta": "aGk="},
    {"type": "response.audio.done"},
    {"type": "response.audio.transcript.delta", "delta": "hi"},
    {"type": "response.audio.transcript.done"},
]


def union_members() -> dict[str, Any]:
    """Each event type of the SDK's union, with its model."""
    union = typing.get_args(typing.get_args(ResponseStreamEvent)[0])
    return {
        kind: member
        for member in union
        for kind in typing.get_args(member.model_fields["type"].annotation)
    }


@pytest.mark.parametrize("event", RELAYED, ids=[e["type"] for e in RELAYED])
def test_a_responses_upstreams_event_is_relayed_unchanged(
    gateway: Gateway, event: dict[str, Any]
) -> None:
    gateway.fake.script(Reply(text="Here.", extra_events=[event]))
    client = gateway.client()
    events = list(client.responses.create(model="resp-model", input="x", stream=True))
    [relayed] = [e for e in events if e.type == event["type"]]
    sent = relayed.model_dump(exclude_unset=True)
    assert {k: v for k, v in sent.items() if k not in ("item_id", "sequence_number")} == {
        k: v for k, v in event.items() if k != "item_id"
    }
    if event.get("item_id") == MESSAGE:  # the gateway's id for the upstream's item
        assert relayed.item_id == events[-1].response.output[0].id  # type: ignore[union-attr]
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_every_type_of_the_union_is_made_or_relayed() -> None:
    members = union_members()
    relayed = {event["type"] for event in RELAYED}
    assert set(members) >= MADE_HERE
    assert relayed <= set(members) - MADE_HERE
    # Every other type is about one output item (``output_index``), which the relay passes on
    # as it does these, ids mapped to the gateway's.
    unplaced = [
        kind
        for kind, member in members.items()
        if kind not in MADE_HERE | relayed and "output_index" not in member.model_fields
    ]
    assert unplaced == []


# Types whose events the fake upstream's own items already stream (added, parts, text).
ITEM_EVENTS = {
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
}
SCALARS: dict[Any, Any] = {str: "x", int: 0, float: 0.0, bool: False, object: {}}


def scalar_events() -> list[dict[str, Any]]:
    """An event of each type of the union that is neither made here nor written above,
    built from its required fields, all of them plain values."""
    made: list[dict[str, Any]] = []
    for kind, member in union_members().items():
        if kind in MADE_HERE | ITEM_EVENTS | {e["type"] for e in RELAYED}:
            continue
        event: dict[str, Any] = {"type": kind}
        for name, field in member.model_fields.items():
            if field.is_required() and name not in ("type", "sequence_number"):
                event[name] = MESSAGE if name == "item_id" else SCALARS[field.annotation]
        made.append(event)
    return made


@pytest.mark.parametrize("event", scalar_events(), ids=lambda e: e["type"])
def test_every_other_type_of_the_union_is_relayed_unchanged(
    gateway: Gateway, event: dict[str, Any]
) -> None:
    test_a_responses_upstreams_event_is_relayed_unchanged(gateway, event)


def test_the_union_is_covered_type_by_type() -> None:
    covered = MADE_HERE | ITEM_EVENTS | {e["type"] for e in [*RELAYED, *scalar_events()]}
    assert covered == set(union_members())
