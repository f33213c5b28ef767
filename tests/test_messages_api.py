"""``POST /v1/messages`` end to end: the strict ``anthropic`` SDK through the gateway to a
Chat Completions, a Responses and a Claude model (the fakes check what they receive)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from gateway import create_app, parse_config

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

KEY_A = "sk-team-a-0123456789abcdef"
KEY_B = "sk-team-b-0123456789abcdef"
KEY_LIMITED = "sk-team-c-0123456789abcdef"
ADMIN = "sk-admin-0123456789abcdef"
MODELS = ["chat-model", "resp-model", "claude"]
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
PIXEL = base64.b64encode(bytes.fromhex("89504e470d0a1a0a")).decode()


class Messages:
    """A gateway in front of both fakes, with two projects' keys."""

    def __init__(self, url: str, chat: FakeUpstream, claude: FakeAnthropic) -> None:
        self.url = url
        self.chat = chat
        self.claude = claude
        self._clients: list[anthropic.Anthropic] = []

    def client(self, key: str = KEY_A, *, bearer: bool = False) -> anthropic.Anthropic:
        auth: dict[str, Any] = {"auth_token": key} if bearer else {"api_key": key}
        client = anthropic.Anthropic(
            base_url=self.url, max_retries=0, _strict_response_validation=True, **auth
        )
        self._clients.append(client)
        return client

    def script(self, model: str, text: str, **extra: Any) -> None:
        """One answer of ``model``'s fake: text, and ``reasoning``, ``tool_calls``."""
        if model == "claude":
            tool_uses = [(i, n, json.loads(a)) for i, n, a in extra.pop("tool_calls", [])]
            reply = AnthropicReply(  # Claude sends no empty text block, nor takes one back
                text=text or None, thinking=extra.get("reasoning"), tool_uses=tool_uses
            )
            self.claude.script(reply)
        else:
            self.chat.script(Reply(text=text, **extra))

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture
def messages(
    anthropic_upstream: tuple[FakeAnthropic, str],
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
) -> Iterator[Messages]:
    claude, claude_url = anthropic_upstream
    claude.reset()
    chat, chat_url = fake_upstream
    config = parse_config(
        {
            "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
            "server": {"max_body_bytes": 100_000},
            "auth": {
                "mode": "keys",
                "cache_seconds": 0,
                "admin_key": ADMIN,
                "keys": [
                    {"key": KEY_A, "project": "team-a", "name": "a"},
                    {"key": KEY_B, "project": "team-b", "name": "b"},
                    {"key": KEY_LIMITED, "project": "team-c", "requests_per_minute": 1},
                ],
            },
            "providers": {
                "claude": {
                    "wire_api": "anthropic",
                    "base_url": claude_url,
                    "api_key": ANTHROPIC_KEY,
                },
                "chat": {
                    "wire_api": "chat_completions",
                    "base_url": f"{chat_url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
                "responses": {
                    "wire_api": "responses",
                    "base_url": f"{chat_url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
            },
            "models": {
                "claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"},
                "chat-model": {"provider": "chat", "upstream_model": "upstream-chat"},
                "resp-model": {"provider": "responses", "upstream_model": "upstream-resp"},
            },
        },
        env={},
    )
    with serve(create_app(config)) as url:
        made = Messages(url, chat, claude)
        yield made
        made.close()


def ask(client: anthropic.Anthropic, stream: bool, **request: Any) -> tuple[Any, list[str]]:
    """The answer, and the types of the stream's events (none unstreamed)."""
    request.setdefault("max_tokens", 1024)
    if not stream:
        return client.messages.create(**request), []
    with client.messages.stream(**request) as events:
        kinds: list[str] = [event.type for event in events]
        return events.get_final_message(), kinds


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_every_model_answers_text_with_usage(messages: Messages, model: str, stream: bool) -> None:
    messages.script(model, "Hello from the model.")
    answer, kinds = ask(
        messages.client(),
        stream,
        model=model,
        system=[{"type": "text", "text": "Be brief."}],
        messages=[{"role": "user", "content": "Say hello"}],
    )
    assert [block.type for block in answer.content] == ["text"]
    assert answer.content[0].text == "Hello from the model."
    assert answer.stop_reason == "end_turn"
    assert answer.model == model and answer.id.startswith("msg_")
    assert answer.usage.output_tokens > 0
    if stream:
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "content_block_delta" in kinds
    if model == "claude":
        sent = messages.claude.last
        assert sent["system"][0]["text"] == "Be brief."
        assert sent["max_tokens"] == 1024
    elif model == "chat-model":
        assert messages.chat.last["messages"][0] == {"role": "system", "content": "Be brief."}
        assert messages.chat.last["max_tokens"] == 1024
    else:
        assert messages.chat.last["instructions"] == "Be brief."
        assert messages.chat.last["store"] is False


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", ["chat-model", "claude"])
def test_a_tool_use_round_trip(messages: Messages, model: str, stream: bool) -> None:
    client = messages.client()
    messages.script(
        model,
        "",
        tool_calls=[("call_1", "get_weather", '{"city": "Paris"}')],
        **({"finish_reason": "tool_calls"} if model != "claude" else {}),
    )
    question = {"role": "user", "content": "Weather in Paris?"}
    first, kinds = ask(client, stream, model=model, tools=[WEATHER], messages=[question])
    assert first.stop_reason == "tool_use"
    [call] = [block for block in first.content if block.type == "tool_use"]
    assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Paris"})
    if stream:
        assert "input_json" in kinds
    messages.script(model, "Sunny in Paris.")
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21 C"}
    history = [question, {"role": "assistant", "content": first.content}]
    second, _ = ask(
        client,
        stream,
        model=model,
        tools=[WEATHER],
        messages=[*history, {"role": "user", "content": [result]}],
    )
    assert second.content[-1].text == "Sunny in Paris." and second.stop_reason == "end_turn"
    if model == "claude":
        sent = messages.claude.last["messages"]
        assert sent[-1]["content"][0]["type"] == "tool_result"
        assert sent[-1]["content"][0]["tool_use_id"] == "call_1"
    else:
        sent = messages.chat.last["messages"]
        assert sent[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert sent[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_models_reasoning_is_thinking_sealed_and_sent_back_to_it_alone(
    messages: Messages, stream: bool
) -> None:
    client = messages.client()
    messages.script("chat-model", "42.", reasoning="Six times seven.")
    question = {"role": "user", "content": "Six times seven?"}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    first, kinds = ask(client, stream, model="chat-model", messages=[question], thinking=thinking)
    thought, text = first.content
    assert thought.type == "thinking" and thought.thinking == "Six times seven."
    assert thought.signature.startswith("gwt1.") and "seven" not in thought.signature
    assert text.text == "42."
    if stream:
        assert "thinking" in kinds and "signature" in kinds
    follow: list[Any] = [
        question,
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": "And six times eight?"},
    ]
    ask(client, stream, model="chat-model", messages=follow, thinking=thinking)
    assert messages.chat.last["messages"][1] == {
        "role": "assistant",
        "content": "42.",
        "reasoning_content": "Six times seven.",
    }
    # Another model cannot read it: the block is left out, the visible answer goes.
    ask(client, stream, model="resp-model", messages=follow)
    sent = messages.chat.last["input"]
    assert [item.get("type", "message") for item in sent] == ["message"] * 3
    # Another project's key cannot open it.
    with pytest.raises(anthropic.BadRequestError) as refused:
        messages.client(KEY_B).messages.create(model="chat-model", max_tokens=64, messages=follow)
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert "signature" in refused.value.body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_claudes_thinking_keeps_claudes_signature(messages: Messages, stream: bool) -> None:
    client = messages.client()
    messages.script("claude", "42.", reasoning="Six times seven.")
    question = {"role": "user", "content": "Six times seven?"}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    first, _ = ask(
        client, stream, model="claude", messages=[question], thinking=thinking, max_tokens=4096
    )
    thought = first.content[0]
    assert thought.type == "thinking" and thought.thinking == "Six times seven."
    assert thought.signature == messages.claude.sign("Six times seven.")
    follow: list[Any] = [
        question,
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": "And six times eight?"},
    ]
    messages.script("claude", "48.")
    ask(client, stream, model="claude", messages=follow, thinking=thinking, max_tokens=4096)
    replayed = messages.claude.replayed_thinking()
    assert replayed == [
        {"type": "thinking", "thinking": "Six times seven.", "signature": thought.signature}
    ]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", MODELS)
def test_a_stop_sequence_ends_the_text_before_it(
    messages: Messages, model: str, stream: bool
) -> None:
    messages.script(model, "one two STOP three")
    answer, _ = ask(
        messages.client(),
        stream,
        model=model,
        stop_sequences=["STOP"],
        messages=[{"role": "user", "content": "count"}],
    )
    assert answer.content[0].text == "one two "
    assert (answer.stop_reason, answer.stop_sequence) == ("stop_sequence", "STOP")


@pytest.mark.parametrize("model", ["chat-model", "claude"])
def test_images_and_documents_reach_the_model(messages: Messages, model: str) -> None:
    messages.script(model, "A pixel.")
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
        {"type": "text", "text": "What is this?"},
    ]
    answer = messages.client().messages.create(
        model=model, max_tokens=256, messages=[{"role": "user", "content": content}]
    )
    assert answer.content[0].text == "A pixel."
    if model == "claude":
        block = messages.claude.last["messages"][0]["content"][0]
        assert block["source"] == {"type": "base64", "media_type": "image/png", "data": PIXEL}
    else:
        part = messages.chat.last["messages"][0]["content"][0]
        assert part["image_url"]["url"] == f"data:image/png;base64,{PIXEL}"


@pytest.mark.parametrize("model", MODELS)
def test_count_tokens(messages: Messages, model: str) -> None:
    counted = messages.client().messages.count_tokens(
        model=model, messages=[{"role": "user", "content": "How many tokens is this?"}]
    )
    assert counted.input_tokens > 0
    if model == "claude":
        assert messages.claude.paths[-1] == "/v1/messages/count_tokens"


@pytest.mark.parametrize("bearer", [False, True])
def test_errors_come_in_anthropics_shape(messages: Messages, bearer: bool) -> None:
    question: list[Any] = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.AuthenticationError) as bad_key:
        messages.client("sk-wrong-0123456789abcdef", bearer=bearer).messages.create(
            model="chat-model", max_tokens=64, messages=question
        )
    assert bad_key.value.body["type"] == "error"
    assert bad_key.value.body["error"]["type"] == "authentication_error"
    client = messages.client(bearer=bearer)
    with pytest.raises(anthropic.NotFoundError) as unknown:
        client.messages.create(model="no-such-model", max_tokens=64, messages=question)
    assert unknown.value.body["error"]["type"] == "not_found_error"
    assert "no-such-model" in unknown.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as bad_body:
        client.messages.create(model="chat-model", max_tokens=0, messages=question)
    assert bad_body.value.body["error"]["type"] == "invalid_request_error"
    assert bad_body.value.response.headers["x-request-id"]
    assert messages.chat.requests == []


def test_the_middlewares_refusals_come_in_anthropics_shape(messages: Messages) -> None:
    missing = httpx.post(f"{messages.url}/v1/messages", json={})
    assert missing.status_code == 401
    assert missing.json()["error"]["type"] == "authentication_error"
    not_json = httpx.post(
        f"{messages.url}/v1/messages",
        content=b"hello",
        headers={"x-api-key": KEY_A, "content-type": "text/plain"},
    )
    assert not_json.status_code == 415 and not_json.json()["type"] == "error"
    too_large = httpx.post(
        f"{messages.url}/v1/messages",
        json={"model": "chat-model", "max_tokens": 16, "messages": [], "pad": "x" * 100_000},
        headers={"x-api-key": KEY_A},
    )
    assert too_large.status_code == 413
    assert too_large.json()["error"]["type"] == "request_too_large"
    limited = messages.client(KEY_LIMITED)
    limited.models.list()  # the key's one request this minute
    with pytest.raises(anthropic.RateLimitError) as refused:
        limited.messages.create(
            model="chat-model", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.body["error"]["type"] == "rate_limit_error"
    assert refused.value.response.headers["retry-after"]
    elsewhere = httpx.post(f"{messages.url}/v1/responses", json={})
    assert elsewhere.status_code == 401 and "type" not in elsewhere.json()


def test_models_in_anthropics_shape_and_headers_on_every_exchange(messages: Messages) -> None:
    listed = messages.client().models.list()
    assert {model.id for model in listed.data} == set(MODELS)
    messages.script("chat-model", "hi")
    raw = messages.client().messages.with_raw_response.create(
        model="chat-model", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert raw.headers["x-request-id"]
    assert raw.headers["x-gateway-upstream"] == "chat/upstream-chat"


def test_a_projects_turns_count_in_its_own_usage(messages: Messages) -> None:
    for key in (KEY_A, KEY_A, KEY_B):
        messages.client(key).messages.create(
            model="chat-model", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    usage = httpx.get(
        f"{messages.url}/v1/gateway/console/usage",
        headers={"authorization": f"Bearer {ADMIN}"},
        params={"by": "project"},
    )
    assert usage.status_code == 200, usage.text
    groups = {group["group"]: group["requests"] for group in usage.json()["groups"]}
    assert groups == {"team-a": 2, "team-b": 1}


@pytest.mark.parametrize("model", MODELS)
def test_a_failed_tool_result_reaches_the_model_as_an_error(messages: Messages, model: str) -> None:
    messages.script(model, "The lookup failed.")
    call = {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oz"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": "no such city",
        "is_error": True,
    }
    answer = messages.client().messages.create(
        model=model,
        max_tokens=256,
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Oz?"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ],
    )
    assert answer.content[0].text == "The lookup failed."
    if model == "claude":
        sent = messages.claude.last["messages"][-1]["content"][0]
        assert (sent["type"], sent["tool_use_id"]) == ("tool_result", "call_1")
        assert (sent["content"], sent["is_error"]) == ("no such city", True)
    elif model == "chat-model":
        assert messages.chat.last["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Error: no such city",
        }
    else:
        [output] = [i for i in messages.chat.last["input"] if i["type"] == "function_call_output"]
        assert (output["call_id"], output["output"]) == ("call_1", "Error: no such city")
        assert "is_error" not in output  # not a field of OpenAI's


def test_one_model_in_anthropics_shape_and_in_openais(messages: Messages) -> None:
    claude = messages.client().models.retrieve("claude")
    assert (claude.type, claude.id, claude.display_name) == ("model", "claude", "claude")
    assert claude.created_at.year == 1970
    with pytest.raises(anthropic.NotFoundError) as unknown:
        messages.client().models.retrieve("no-such-model")
    assert unknown.value.body["type"] == "error"
    assert unknown.value.body["error"]["type"] == "not_found_error"
    assert "no-such-model" in unknown.value.body["error"]["message"]
    client = openai.OpenAI(
        base_url=f"{messages.url}/v1",
        api_key=KEY_A,
        max_retries=0,
        _strict_response_validation=True,
    )
    with client:
        model = client.models.retrieve("chat-model")
        assert (model.id, model.object, model.owned_by) == ("chat-model", "model", "chat")
        with pytest.raises(openai.NotFoundError) as missing:
            client.models.retrieve("no-such-model")
    assert missing.value.code == "model_not_found"
    assert missing.value.body == {
        "message": "The model 'no-such-model' does not exist or is not routed by this gateway.",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }


HI: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "chat-model", "messages": HI}, "max_tokens: Field required"),
        ({"max_tokens": 64, "messages": HI}, "model: Field required"),
        (
            {"model": "chat-model", "max_tokens": 0, "messages": HI},
            "max_tokens: Input should be greater than or equal to 1",
        ),
        (
            {"model": "chat-model", "max_tokens": "64", "messages": HI},
            "max_tokens: Input should be a valid integer",
        ),
        (
            {"model": "chat-model", "max_tokens": 64, "messages": []},
            "messages: at least one message is required",
        ),
        (
            {"model": "chat-model", "max_tokens": 64, "messages": ["hi"]},
            "messages.0: Input should be a valid dictionary",
        ),
        (
            {"model": "chat-model", "max_tokens": 64, "messages": [{"role": "user"}]},
            "messages.0.content: Field required",
        ),
        (
            {"model": "chat-model", "max_tokens": 64, "messages": [*HI, {"role": "robot"}]},
            "messages.1.role: ",
        ),
        (
            {
                "model": "chat-model",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": [{"type": "bogus"}]}],
            },
            "messages.0.content.0.type: ",
        ),
    ],
)
def test_a_bad_body_is_refused_in_anthropics_words(
    messages: Messages, body: dict[str, Any], message: str
) -> None:
    answer = httpx.post(
        f"{messages.url}/v1/messages",
        json=body,
        headers={"x-api-key": KEY_A, "anthropic-version": "2023-06-01"},
    )
    assert answer.status_code == 400
    assert answer.json()["type"] == "error"
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(message), error["message"]
    assert messages.chat.requests == []


CONTEXT_BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 30000},
    "keep": {"type": "tool_uses", "value": 3},
}
KEEP_THINKING = {"type": "clear_thinking_20251015", "keep": "all"}


@pytest.mark.parametrize("stream", [False, True])
def test_top_k_and_context_edits_reach_claude_as_sent(messages: Messages, stream: bool) -> None:
    messages.script("claude", "Edited.")
    client = messages.client()
    request: dict[str, Any] = {
        "model": "claude",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Hi"}],
        "betas": [CONTEXT_BETA],
        "context_management": {"edits": [CLEAR_TOOL_USES]},
        "extra_body": {"top_k": 5},
    }
    if stream:
        with client.beta.messages.stream(**request) as events:
            answer = events.get_final_message()
    else:
        answer = client.beta.messages.create(**request)
    assert [block.text for block in answer.content if block.type == "text"] == ["Edited."]
    sent = messages.claude.last
    assert sent["top_k"] == 5 and sent["context_management"] == {"edits": [CLEAR_TOOL_USES]}
    assert CONTEXT_BETA in messages.claude.headers[-1]["anthropic-beta"]

    # Claude's own verdict on them comes back as it gave it.
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with pytest.raises(anthropic.BadRequestError, match="`top_k` may not be set when thinking"):
        client.messages.create(
            model="claude",
            max_tokens=2048,
            thinking=thinking,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"top_k": 5},
        )
    with pytest.raises(anthropic.BadRequestError, match="context_management: Extra inputs"):
        client.messages.create(  # no beta header: the field is not Claude's GA API's
            model="claude",
            max_tokens=256,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"context_management": {"edits": [KEEP_THINKING]}},
        )


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_top_k_and_context_edits_are_refused_for_another_wire(
    messages: Messages, model: str
) -> None:
    client = messages.client()
    hi: Any = [{"role": "user", "content": "Hi"}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model=model, max_tokens=64, messages=hi, extra_body={"top_k": 5})
    message = refused.value.body["error"]["message"]  # type: ignore[index]
    assert message.startswith(f"top_k: not supported for model '{model}'"), message
    wire = "chat_completions" if model == "chat-model" else "responses"
    assert f"the {wire} wire" in message

    with pytest.raises(anthropic.BadRequestError) as refused:
        client.beta.messages.create(
            model=model,
            max_tokens=64,
            messages=hi,
            betas=[CONTEXT_BETA],
            context_management={"edits": [KEEP_THINKING, CLEAR_TOOL_USES]},  # type: ignore[list-item]
        )
    message = refused.value.body["error"]["message"]  # type: ignore[index]
    # Worded as Claude's API words it, which Claude Code reads to send the request again
    # without the edit.
    assert re.match(
        r"^\S{1,128} does not support the \W?clear_tool_uses_20250919\W? context management "
        "strategy",
        message,
    ), message
    assert messages.chat.requests == []

    # An edit that asks for nothing (every thinking block kept) is no reason to refuse.
    messages.script(model, "Kept.")
    answer = client.beta.messages.create(
        model=model,
        max_tokens=64,
        messages=hi,
        betas=[CONTEXT_BETA],
        context_management={"edits": [KEEP_THINKING]},
    )
    assert [block.text for block in answer.content if block.type == "text"] == ["Kept."]
    assert "context_management" not in messages.chat.last


@pytest.mark.parametrize("model", ["chat-model", "resp-model"])
def test_a_field_the_gateway_does_not_read_is_refused_for_another_wire_not_dropped(
    messages: Messages, model: str
) -> None:
    client = messages.client()
    hi: Any = [{"role": "user", "content": "Hi"}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(
            model=model, max_tokens=64, messages=hi, extra_body={"container": "container_1"}
        )
    message = refused.value.body["error"]["message"]  # type: ignore[index]
    assert message.startswith(f"container: not supported for model '{model}'"), message
    assert messages.chat.requests == []

    # A capacity tier or Claude's own prompt caching asks nothing of the answer.
    messages.script(model, "Served.")
    answer = client.messages.create(
        model=model,
        max_tokens=64,
        messages=hi,
        extra_body={"service_tier": "auto", "cache_control": {"type": "ephemeral"}},
    )
    assert [block.text for block in answer.content if block.type == "text"] == ["Served."]
