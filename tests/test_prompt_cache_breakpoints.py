"""The client's prompt cache breakpoints (``prompt_cache_breakpoint`` on content parts,
``prompt_cache_options``) and the gateway's own as Anthropic ``cache_control``, exactly as
sent to the strict fake Messages API."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import Gateway
from .fake_anthropic import FakeAnthropic
from .test_anthropic_wire import WEATHER, claude  # noqa: F401

pytestmark = [pytest.mark.api]

SHORT = {"type": "ephemeral"}
LONG = {"type": "ephemeral", "ttl": "1h"}


def text(value: str, ttl: str | None = None) -> dict[str, Any]:
    """An input_text part marked as a breakpoint (with ``ttl``, if given)."""
    breakpoint: dict[str, Any] = {"mode": "explicit", **({"ttl": ttl} if ttl else {})}
    return {"type": "input_text", "text": value, "prompt_cache_breakpoint": breakpoint}


def marks(payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """Where ``cache_control`` is, in prompt order: (what the block says, its mark)."""
    found = []
    for tool in payload.get("tools", []):
        if "cache_control" in tool:
            found.append((f"tool {tool['name']}", tool["cache_control"]))
    for block in payload.get("system", []):
        if "cache_control" in block:
            found.append((f"system {block['text']}", block["cache_control"]))
    for message in payload["messages"]:
        for block in message["content"]:
            if "cache_control" in block:
                found.append((f"{message['role']} {block.get('text')}", block["cache_control"]))
    return found


def test_the_clients_breakpoints_join_the_gateways_own(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    gateway.client().responses.create(
        model="claude",
        instructions="Be brief.",
        tools=[WEATHER],  # type: ignore[list-item]
        input=[{"role": "user", "content": [text("the manual"), {"type": "input_text",
                                                                  "text": "a question"}]}],
    )  # fmt: skip
    assert marks(fake.last) == [
        ("tool get_weather", SHORT),
        ("system Be brief.", SHORT),
        ("user the manual", SHORT),
        ("user a question", SHORT),
    ]


def test_at_most_four_are_sent_the_newest_kept(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    parts = [text(f"part {n}") for n in range(6)]
    gateway.client().responses.create(
        model="claude",
        instructions="Be brief.",
        input=[{"role": "user", "content": parts}],  # type: ignore[list-item]
        prompt_cache_options={"mode": "explicit"},
    )
    assert marks(fake.last) == [(f"user part {n}", SHORT) for n in range(2, 6)]
    # Implicit (the default): the gateway's own count among the four, by position.
    gateway.client().responses.create(
        model="claude",
        instructions="Be brief.",
        input=[{"role": "user", "content": [*parts, {"type": "input_text", "text": "end"}]}],  # type: ignore[list-item]
    )
    assert marks(fake.last) == [
        ("user part 3", SHORT),
        ("user part 4", SHORT),
        ("user part 5", SHORT),
        ("user end", SHORT),
    ]


def test_a_lifetime_asked_for_is_an_hour_and_never_follows_a_shorter_one(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    gateway.client().responses.create(
        model="claude",
        instructions="Be brief.",
        input=[{"role": "user", "content": [text("early"), text("later", "12h"),
                                            {"type": "input_text", "text": "question"}]}],
        prompt_cache_options={"mode": "implicit"},
    )  # fmt: skip
    assert marks(fake.last) == [
        ("system Be brief.", LONG),  # before an hour-long one: as long
        ("user early", LONG),
        ("user later", LONG),
        ("user question", SHORT),
    ]
    gateway.client().responses.create(
        model="claude",
        instructions="Be brief.",
        input="question",
        prompt_cache_options={"ttl": "30m"},
    )
    assert marks(fake.last) == [("system Be brief.", LONG), ("user question", LONG)]


def test_a_growing_chain_marks_where_its_last_turn_ended(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
) -> None:
    gateway, fake = claude
    client = gateway.client()
    first = client.responses.create(model="claude", instructions="Be brief.", input="one")
    client.responses.create(
        model="claude", instructions="Be brief.", input="two", previous_response_id=first.id
    )
    sent = fake.last
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    # The previous request's end (read from the cache) and this one's (written for the next).
    assert marks(sent) == [("system Be brief.", SHORT), ("user one", SHORT), ("user two", SHORT)]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt_cache_options": {"mode": "always"}}, "prompt_cache_options.mode"),
        ({"prompt_cache_options": {"ttl": "5m"}}, "prompt_cache_options.ttl"),
        ({"prompt_cache_options": "explicit"}, "prompt_cache_options"),
        (
            {"input": [{"role": "user", "content": [
                {"type": "input_text", "text": "x", "prompt_cache_breakpoint": {"ttl": "30m"}}
            ]}]},
            "input[0].content[0].prompt_cache_breakpoint.mode",
        ),
        (
            {"input": [{"role": "user", "content": [
                {"type": "input_text", "text": "x",
                 "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "1h"}}
            ]}]},
            "input[0].content[0].prompt_cache_breakpoint.ttl",
        ),
    ],
)  # fmt: skip
def test_a_malformed_cache_field_is_a_400_naming_it(
    claude: tuple[Gateway, FakeAnthropic],  # noqa: F811
    body: dict[str, Any],
    param: str,
) -> None:
    gateway, fake = claude
    answer = httpx.post(
        f"{gateway.url}/v1/responses", json={"model": "claude", "input": "hi", **body}
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param), error
    assert fake.requests == []
