"""Records for the console's tests: a chain with branches, a turn of every kind of item,
a turn whose text is markup, a conversation, an agent Store conversation, a deep chain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from session import (
    Conversation,
    RequestSnapshot,
    ResponseSnapshot,
    SessionStore,
    StoredResponse,
    new_id,
)

from .records import assistant_item, user_item

INJECTION = "<script>alert(1)</script><img src=x onerror=alert(1)>"
# A 1x1 PNG, as a data: URL.
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8Bw"
    "HwAFAAH/q842WQAAAABJRU5ErkJggg=="
)
LONG_MODEL = "accounts/fireworks/models/llama-v3p1-405b-instruct-long-name"
START = 1_790_000_000.0  # a fixed time, so that ranges and buckets are known


@dataclass
class Seeded:
    """What :func:`seed` stored, by the names the tests look for."""

    ids: dict[str, str] = field(default_factory=dict)
    deep_head: str = ""
    deep_root: str = ""


def _turn(
    response_id: str,
    parent: str | None,
    at: float,
    text: str,
    *,
    project: str = "default",
    model: str = "echo-1",
    output: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    status: str = "completed",
    **request: Any,
) -> StoredResponse:
    return StoredResponse(
        id=response_id,
        previous_response_id=parent,
        project=project,
        created_at=at,
        completed_at=at + 1.25,
        status=status,  # type: ignore[arg-type]
        request=RequestSnapshot(
            model=model, input=[user_item(f"in_{response_id}", text)], **request
        ),
        response=ResponseSnapshot(
            output=output or [assistant_item(f"out_{response_id}", f"answer to {text}")],
            usage={
                "input_tokens": 100,
                "output_tokens": 20,
                "input_tokens_details": {"cached_tokens": 40},
                "output_tokens_details": {"reasoning_tokens": 5},
            },
            error={"code": "server_error", "message": "upstream failed"}
            if status == "failed"
            else None,
        ),
        metadata={
            "request_id": f"req_{response_id}",
            "key_id": "static:ci",
            "cost_usd": 0.0015,
            "route": {
                "answered_by": "echo",
                "attempts": [
                    {
                        "deployment": "primary",
                        "key": "primary#0",
                        "outcome": "timeout",
                        "seconds": 3.0,
                    },
                    {"deployment": "echo", "key": "echo#0", "outcome": "answered", "seconds": 1.2},
                ],
            },
            **(metadata or {}),
        },
    )


async def seed(store: SessionStore, *, deep: int = 0) -> Seeded:
    """Store the console's test records; ``deep`` turns in one chain besides."""
    seeded = Seeded()
    ids = seeded.ids
    at = START
    ids["root"], ids["middle"] = "resp_root", "resp_middle"
    ids["branch_a"], ids["branch_b"] = "resp_branch_a", "resp_branch_b"
    await store.save(_turn("resp_root", None, at, "first question", instructions="Be brief."))
    moved = {
        "answered_by": "echo",
        "key": "echo#0",
        "attempts": [
            {"deployment": "primary", "key": "primary#0", "outcome": "http_500", "seconds": 0.1},
            {"deployment": "echo", "key": "echo#0", "outcome": "answered", "seconds": 1.2},
        ],
        "affinity": {
            "source": "chain",
            "target": "primary primary#0",
            "outcome": "moved",
            "reason": "http_500",
        },
    }
    await store.save(
        _turn("resp_middle", "resp_root", at + 60, "second question", metadata={"route": moved})
    )
    await store.save(_turn("resp_branch_a", "resp_middle", at + 120, "branch A question"))
    await store.save(
        _turn("resp_branch_b", "resp_middle", at + 180, "branch B question", status="failed")
    )
    reasoning = {"type": "summary_text", "text": "Thinking about the weather."}
    call = {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    tools: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": [reasoning]},
        {"type": "function_call", "id": "fc_1", **call},
    ]
    await store.save(
        _turn("resp_tools", "resp_branch_a", at + 240, "weather in Paris?", output=tools)
    )
    image_input = StoredResponse(
        **{
            **_turn("resp_image", "resp_tools", at + 300, "x").model_dump(),
            "request": RequestSnapshot(
                model="echo-1",
                input=[
                    {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "and this picture?"},
                            {"type": "input_image", "image_url": PIXEL},
                            {"type": "input_image", "image_url": "https://example.com/cat.png"},
                        ],
                    },
                ],
            ),
        }
    )
    await store.save(image_input)
    ids["tools"], ids["image"] = "resp_tools", "resp_image"
    await store.save(_turn("resp_injection", None, at + 360, INJECTION, model="chat-model"))
    ids["injection"] = "resp_injection"
    await store.save(
        _turn(
            "resp_other", None, at + 420, "secret of team b", project="team-b", model="resp-model"
        )
    )
    ids["other"] = "resp_other"
    conversation = Conversation(
        id="conv_console", project="default", created_at=at, metadata={"topic": "demo"}
    )
    await store.create_conversation(
        conversation,
        [user_item("msg_c1", "hello conversation"), assistant_item("msg_c2", "hello back")],
    )
    ids["conversation"] = "conv_console"
    await store.agent("default").append_message(
        "agent-thread-1", {"role": "user", "content": "hello agent store"}, role="user"
    )
    ids["store_conversation"] = "agent-thread-1"
    parent = None
    for n in range(deep):
        response_id = f"resp_deep_{n:05d}"
        await store.save(_turn(response_id, parent, at + 1000 + n, f"deep turn {n}"))
        parent = response_id
    if deep:
        seeded.deep_root, seeded.deep_head = "resp_deep_00000", parent or ""
    return seeded


async def seed_real_ids(store: SessionStore) -> dict[str, str]:
    """A chain of two turns named as the gateway names them: ids of 53 characters with no
    place to break, request ids as long, a managed key's id and a long model name; what a
    page must fit at any width. Returns the head's and the root's ids."""
    root, head = new_id("resp"), new_id("resp")
    metadata = {"key_id": new_id("key")[:28]}
    for response_id, parent, at, text in (
        (root, None, START + 500, "a question " * 40),
        (head, root, START + 560, "a follow-up question that runs on " * 20),
    ):
        request_id = new_id("req")
        await store.save(
            _turn(
                response_id,
                parent,
                at,
                text,
                model=LONG_MODEL,
                metadata={**metadata, "request_id": request_id},
            )
        )
    return {"real_root": root, "real_head": head}
