"""Property-based fuzzing of the inbound Chat Completions and Messages APIs: no 5xx, no
traceback, no error logged, and every refusal in the edge's own error shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway import create_app

from .conftest import ErrorLog, gateway_config
from .fake_upstream import FakeUpstream
from .fuzz_bodies import HOSTILE, TEXT, encode
from .servers import serve
from .test_fuzz import FUZZ, JSON, TRACEBACK

pytestmark = [pytest.mark.api]

MODELS = st.sampled_from(["echo", "chat-model", "resp-model", "no-such-model"])
ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool", "bogus"])
PARTS = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": HOSTILE}),
    st.fixed_dictionaries({"type": st.just("image"), "source": HOSTILE}),
    st.fixed_dictionaries(
        {"type": st.just("tool_use"), "id": TEXT, "name": TEXT, "input": HOSTILE}
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": TEXT, "content": HOSTILE}
    ),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": TEXT, "signature": TEXT}),
    HOSTILE,
)
MESSAGES = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"role": ROLES, "content": st.one_of(TEXT, st.lists(PARTS, max_size=3), HOSTILE)}
        ),
        st.fixed_dictionaries(
            {
                "role": st.just("assistant"),
                "content": st.none(),
                "tool_calls": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": TEXT,
                            "type": st.just("function"),
                            "function": st.fixed_dictionaries(
                                {"name": TEXT, "arguments": st.one_of(TEXT, HOSTILE)}
                            ),
                        }
                    ),
                    max_size=2,
                ),
            }
        ),
        st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": TEXT, "content": TEXT}),
        HOSTILE,
    ),
    max_size=4,
)
CHAT_FIELDS = [
    "tools", "tool_choice", "response_format", "stream", "stream_options", "n", "max_tokens",
    "max_completion_tokens", "temperature", "top_p", "stop", "seed", "logprobs",
    "top_logprobs", "reasoning_effort", "parallel_tool_calls", "user", "metadata",
]  # fmt: skip
MESSAGES_FIELDS = [
    "system", "tools", "tool_choice", "stream", "stop_sequences", "thinking", "temperature",
    "top_p", "top_k", "metadata", "service_tier",
]  # fmt: skip


@st.composite
def bodies(draw: st.DrawFn, fields: list[str], max_tokens: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(MODELS), "messages": draw(MESSAGES)}
    if max_tokens and draw(st.booleans()):
        body["max_tokens"] = draw(st.one_of(st.integers(-5, 5000), HOSTILE))
    for field in draw(st.lists(st.sampled_from(fields), max_size=4, unique=True)):
        body[field] = draw(st.one_of(st.booleans(), st.integers(-3, 300), TEXT, HOSTILE))
    return body


@pytest.fixture(scope="module")
def client(
    fake_upstream: tuple[FakeUpstream, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    db: Path = tmp_path_factory.mktemp("fuzz-edges") / "s.db"
    app = create_app(gateway_config(fake_upstream[1], db))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def checked(response: httpx.Response, errors: ErrorLog) -> Any:
    """No 5xx, no traceback, nothing logged as an error; the body, if JSON."""
    assert response.status_code < 500, response.text
    assert TRACEBACK not in response.text
    assert not errors.records, [record.getMessage() for record in errors.records]
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return None
    return response.json()


@FUZZ
@given(body=bodies(CHAT_FIELDS, max_tokens=False))
def test_chat_completions(client: httpx.Client, errors: ErrorLog, body: dict[str, Any]) -> None:
    response = client.post("/v1/chat/completions", content=encode(body), headers=JSON)
    answer = checked(response, errors)
    if response.status_code >= 400:
        assert set(answer["error"]) == {"message", "type", "param", "code"}


@FUZZ
@given(body=bodies(MESSAGES_FIELDS, max_tokens=True))
def test_messages(client: httpx.Client, errors: ErrorLog, body: dict[str, Any]) -> None:
    headers = {**JSON, "anthropic-version": "2023-06-01"}
    response = client.post("/v1/messages", content=encode(body), headers=headers)
    answer = checked(response, errors)
    if response.status_code >= 400:
        assert answer["type"] == "error" and {"type", "message"} <= set(answer["error"])
