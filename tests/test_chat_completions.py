"""``POST /v1/chat/completions``: the strict ``openai`` SDK's ``chat.completions`` through
the gateway to a Responses upstream, a Chat Completions upstream and Claude on the
Messages wire (a strict fake validating with the ``anthropic`` SDK's types), streamed and
not; each test asserts what the upstream received."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pydantic
import pytest
from openai import OpenAI

from gateway import create_app, parse_config

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

TEAM_A = "sk-static-team-a-0123456789"
TEAM_B = "sk-static-team-b-0123456789"
LIMITED = "sk-static-limited-0123456789"
ADMIN = "sk-admin-0123456789"
MODELS = ("resp-model", "chat-model", "claude")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@dataclass
class ChatGateway:
    url: str
    fake: FakeUpstream
    claude: FakeAnthropic
    clients: list[OpenAI]

    def client(self, key: str = TEAM_A) -> OpenAI:
        client = OpenAI(
            base_url=f"{self.url}/v1", api_key=key, max_retries=0, _strict_response_validation=True
        )
        self.clients.append(client)
        return client

    def post(self, body: Any, key: str = TEAM_A) -> httpx.Response:
        headers = {"authorization": f"Bearer {key}"}
        return httpx.post(f"{self.url}/v1/chat/completions", json=body, headers=headers, timeout=30)

    def received(self, model: str) -> dict[str, Any]:
        """The last body the model's upstream received."""
        return self.claude.last if model == "claude" else self.fake.last

    def script(
        self,
        model: str,
        *,
        text: str | None = None,
        reasoning: str | None = None,
        calls: tuple[tuple[str, str, dict[str, Any]], ...] = (),
    ) -> None:
        """One scripted answer for ``model``'s upstream."""
        if model == "claude":
            self.claude.script(AnthropicReply(text=text, thinking=reasoning, tool_uses=list(calls)))
        else:
            tool_calls = [(cid, name, json.dumps(args)) for cid, name, args in calls]
            self.fake.script(Reply(text=text, reasoning=reasoning, tool_calls=tool_calls))


@pytest.fixture(scope="module")
def anthropic_upstream() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture
def chat(
    anthropic_upstream: tuple[FakeAnthropic, str],
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
) -> Iterator[ChatGateway]:
    claude, claude_url = anthropic_upstream
    claude.reset()
    fake, url = fake_upstream
    config = parse_config(
        {
            "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
            "auth": {
                "mode": "keys",
                "cache_seconds": 0,
                "admin_key": ADMIN,
                "keys": [
                    {"key": TEAM_A, "project": "team-a", "name": "a"},
                    {"key": TEAM_B, "project": "team-b", "name": "b"},
                    {"key": LIMITED, "project": "team-c", "requests_per_minute": 2},
                ],
            },
            "providers": {
                "fake-chat": {
                    "wire_api": "chat_completions",
                    "base_url": f"{url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
                "fake-responses": {
                    "wire_api": "responses",
                    "base_url": f"{url}/v1",
                    "api_key": UPSTREAM_KEY,
                },
                "claude": {
                    "wire_api": "anthropic",
                    "base_url": claude_url,
                    "api_key": ANTHROPIC_KEY,
                },
            },
            "models": {
                "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
                "resp-model": {"provider": "fake-responses", "upstream_model": "upstream-resp"},
                "claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"},
            },
        },
        env={},
    )
    with serve(create_app(config)) as gateway_url:
        gateway = ChatGateway(gateway_url, fake, claude, [])
        yield gateway
        for client in gateway.clients:
            client.close()


def user_texts(model: str, body: dict[str, Any]) -> list[str]:
    """The user's words as the upstream received them, on its own wire."""
    key = "input" if model == "resp-model" else "messages"
    texts = []
    for message in body[key]:
        if message.get("role") != "user":
            continue
        content = message["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts += [part["text"] for part in parts if part.get("type") in ("text", "input_text")]
    return texts


@pytest.mark.parametrize("model", MODELS)
def test_a_plain_answer_reaches_every_wire_with_headers(chat: ChatGateway, model: str) -> None:
    client = chat.client()
    chat.script(model, text="Hello there.")
    raw = client.chat.completions.with_raw_response.create(
        model=model,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello."},
        ],
        max_completion_tokens=300,
        temperature=0.5,
        user="end-user-1",
    )
    completion = raw.parse()
    assert raw.headers["x-request-id"].startswith("req_")
    assert raw.headers["x-gateway-upstream"].split("/")[0] in (
        "fake-responses",
        "fake-chat",
        "claude",
    )
    assert completion.object == "chat.completion" and completion.model == model
    [choice] = completion.choices
    assert (choice.message.content, choice.finish_reason) == ("Hello there.", "stop")
    assert completion.usage is not None and completion.usage.total_tokens > 0
    sent = chat.received(model)
    assert user_texts(model, sent) == ["Say hello."]
    if model == "resp-model":
        assert sent["store"] is False and sent["model"] == "upstream-resp"
        assert sent["input"][0]["role"] == "system" and sent["max_output_tokens"] == 300
        assert sent["user"] == "end-user-1" and sent["temperature"] == 0.5
    elif model == "chat-model":
        assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
        assert sent["max_tokens"] == 300 and sent["user"] == "end-user-1"
        assert sent["temperature"] == 0.5
    else:  # the Messages wire carries no temperature (see docs/api.md)
        assert sent["system"][0]["text"] == "Be brief." and sent["max_tokens"] == 300
        assert sent["metadata"] == {"user_id": "end-user-1"}


@pytest.mark.parametrize("model", MODELS)
def test_a_stream_ends_with_the_usage_chunk_and_done(chat: ChatGateway, model: str) -> None:
    chat.script(model, text="Streamed words here.")
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Stream please."}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    answer = chat.post(body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["x-gateway-upstream"] and answer.headers["x-request-id"]
    lines = [line for line in answer.text.splitlines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Streamed words here."
    *_, last_choice, usage = chunks
    assert last_choice["choices"][0]["finish_reason"] == "stop"
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0
    assert all(chunk["usage"] is None for chunk in chunks[:-1])
    assert chat.received(model)["stream"] is True

    client = chat.client()  # and the SDK parses every chunk strictly
    chat.script(model, text="Again.")
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Again?"}], stream=True
    )
    parsed = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in parsed if c.choices) == "Again."
    assert all(chunk.usage is None for chunk in parsed)  # not asked for


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", MODELS)
def test_a_tool_call_round_trip(chat: ChatGateway, model: str, stream: bool) -> None:
    client = chat.client()
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    chat.script(model, calls=(("call_1", "get_weather", {"city": "Paris"}),))
    options: dict[str, Any] = {"tools": [WEATHER], "tool_choice": "auto"}
    if stream:
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        for chunk in client.chat.completions.create(
            model=model, messages=messages, stream=True, **options
        ):
            for delta_call in chunk.choices[0].delta.tool_calls or []:
                entry = calls.setdefault(delta_call.index, {"id": None, "name": "", "args": ""})
                entry["id"] = delta_call.id or entry["id"]
                if delta_call.function is not None:
                    entry["name"] += delta_call.function.name or ""
                    entry["args"] += delta_call.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
        [call] = calls.values()
        call_id, name, arguments = call["id"], call["name"], call["args"]
    else:
        completion = client.chat.completions.create(model=model, messages=messages, **options)
        finish = completion.choices[0].finish_reason
        [tool_call] = completion.choices[0].message.tool_calls or []
        assert tool_call.type == "function"
        call_id, name = tool_call.id, tool_call.function.name
        arguments = tool_call.function.arguments
    assert (finish, call_id, name, json.loads(arguments)) == (
        "tool_calls",
        "call_1",
        "get_weather",
        {"city": "Paris"},
    )
    sent = chat.received(model)
    if model == "resp-model":
        [tool] = sent["tools"]
        assert (tool["type"], tool["name"], tool["strict"]) == ("function", "get_weather", False)
    elif model == "chat-model":
        assert sent["tools"][0]["function"]["name"] == "get_weather"
    else:
        assert sent["tools"][0]["name"] == "get_weather"

    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "Sunny, 21C"},
    ]
    chat.script(model, text="It is sunny in Paris.")
    answer = client.chat.completions.create(model=model, messages=messages, **options)
    assert answer.choices[0].message.content == "It is sunny in Paris."
    sent = chat.received(model)
    if model == "resp-model":
        kinds = [(item.get("type"), item.get("call_id")) for item in sent["input"]]
        assert kinds[1:] == [("function_call", "call_1"), ("function_call_output", "call_1")]
        assert sent["input"][2]["output"] == "Sunny, 21C"
    elif model == "chat-model":
        assert sent["messages"][1]["tool_calls"][0]["id"] == "call_1"
        assert sent["messages"][2] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Sunny, 21C",
        }
    else:
        [use] = sent["messages"][1]["content"]
        [result] = sent["messages"][2]["content"]
        assert (use["type"], use["id"], use["input"]) == ("tool_use", "call_1", {"city": "Paris"})
        assert (result["type"], result["tool_use_id"]) == ("tool_result", "call_1")


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


@pytest.mark.parametrize("model", MODELS)
def test_structured_output_through_the_parse_helper(chat: ChatGateway, model: str) -> None:
    client = chat.client()
    chat.script(model, text='{"city": "Oslo", "celsius": 4}')
    completion = client.chat.completions.parse(
        model=model,
        messages=[{"role": "user", "content": "Weather in Oslo as JSON."}],
        response_format=Weather,
    )
    assert completion.choices[0].message.parsed == Weather(city="Oslo", celsius=4)
    sent = chat.received(model)
    if model == "resp-model":
        fmt = sent["text"]["format"]
        assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "Weather", True)
        assert fmt["schema"]["required"] == ["city", "celsius"]
    elif model == "chat-model":
        schema = sent["response_format"]["json_schema"]
        assert (schema["name"], schema["strict"]) == ("Weather", True)
    else:
        assert sent["output_config"]["format"]["type"] == "json_schema"
        assert sent["output_config"]["format"]["schema"]["required"] == ["city", "celsius"]


@pytest.mark.parametrize("model", MODELS)
def test_structured_output_streamed_through_the_stream_helper(
    chat: ChatGateway, model: str
) -> None:
    client = chat.client()
    chat.script(model, text='{"city": "Lima", "celsius": 19}')
    with client.chat.completions.stream(
        model=model,
        messages=[{"role": "user", "content": "Weather in Lima as JSON."}],
        response_format=Weather,
    ) as stream:
        deltas = [event.delta for event in stream if event.type == "content.delta"]
        final = stream.get_final_completion()
    assert len(deltas) > 1 and "".join(deltas) == '{"city": "Lima", "celsius": 19}'
    assert final.choices[0].message.parsed == Weather(city="Lima", celsius=19)
    sent = chat.received(model)
    assert sent["stream"] is True
    if model == "resp-model":
        assert sent["text"]["format"]["schema"]["required"] == ["city", "celsius"]
    elif model == "chat-model":
        assert sent["response_format"]["json_schema"]["name"] == "Weather"
    else:
        assert sent["output_config"]["format"]["schema"]["required"] == ["city", "celsius"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", MODELS)
def test_reasoning_comes_back_as_reasoning_content(
    chat: ChatGateway, model: str, stream: bool
) -> None:
    chat.script(model, text="42.", reasoning="Six times seven.")
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": "What is 6 x 7?"}],
        "reasoning_effort": "high",
        "max_completion_tokens": 4000,
    }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    answer = chat.post(body)
    assert answer.status_code == 200, answer.text
    if stream:
        chunks = [
            json.loads(line.removeprefix("data: "))
            for line in answer.text.splitlines()
            if line.startswith("data: {")
        ]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
        content = "".join(d.get("content") or "" for d in deltas)
        usage = chunks[-1]["usage"]
    else:
        message = answer.json()["choices"][0]["message"]
        reasoning, content, usage = (
            message["reasoning_content"],
            message["content"],
            answer.json()["usage"],
        )
    assert (reasoning, content) == ("Six times seven.", "42.")
    sent = chat.received(model)
    if model == "resp-model":
        assert sent["reasoning"] == {"effort": "high", "summary": "auto"}
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 3
        assert usage["prompt_tokens_details"]["cached_tokens"] == 2
    elif model == "chat-model":
        assert sent["reasoning_effort"] == "high"
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 2
        assert usage["prompt_tokens_details"]["cached_tokens"] == 3
    else:
        assert sent["thinking"]["type"] in ("enabled", "adaptive")


def upstream_requests(chat: ChatGateway, model: str) -> list[dict[str, Any]]:
    return chat.claude.requests if model == "claude" else chat.fake.requests


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", MODELS)
def test_n_choices_are_n_turns_each_metered(chat: ChatGateway, model: str, stream: bool) -> None:
    for text in ("First answer.", "Second answer.", "Third answer."):
        chat.script(model, text=text)
    client = chat.client()
    messages: Any = [{"role": "user", "content": "Three ways, please."}]
    if stream:
        texts: dict[int, str] = {}
        finishes: dict[int, str] = {}
        chunks = list(
            client.chat.completions.create(
                model=model,
                messages=messages,
                n=3,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        for chunk in chunks:
            for choice in chunk.choices:
                texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
                if choice.finish_reason:
                    finishes[choice.index] = choice.finish_reason
        assert len({chunk.id for chunk in chunks}) == 1
        *_, usage_chunk = chunks
        assert usage_chunk.choices == [] and usage_chunk.usage is not None
        assert [chunk.usage for chunk in chunks[:-1]] == [None] * (len(chunks) - 1)
        usage = usage_chunk.usage
    else:
        completion = client.chat.completions.create(model=model, messages=messages, n=3)
        texts = {c.index: c.message.content or "" for c in completion.choices}
        finishes = {c.index: c.finish_reason for c in completion.choices}
        assert completion.usage is not None
        usage = completion.usage
    assert sorted(texts) == [0, 1, 2] and finishes == {0: "stop", 1: "stop", 2: "stop"}
    assert sorted(texts.values()) == ["First answer.", "Second answer.", "Third answer."]
    sent = upstream_requests(chat, model)
    assert len(sent) == 3 and all("n" not in body for body in sent)
    assert all(user_texts(model, body) == ["Three ways, please."] for body in sent)

    chat.script(model, text="Fourth answer.")
    one = chat.client().chat.completions.create(model=model, messages=messages)
    assert one.usage is not None and usage.prompt_tokens == 3 * one.usage.prompt_tokens
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.completion_tokens == 3 * one.usage.completion_tokens  # answers as long
    answer = httpx.get(
        f"{chat.url}/v1/gateway/console/usage",
        headers={"authorization": f"Bearer {ADMIN}"},
        params={"by": "key"},
    )
    assert answer.json()["totals"]["requests"] == 4  # each choice a turn, metered


def test_n_streamed_with_one_choice_cut_ends_in_its_error(chat: ChatGateway) -> None:
    chat.fake.script(
        Reply(text="one two three four five six", break_after=3),
        Reply(text="one two three four five six", break_after=3),
    )
    body = {
        "model": "chat-model",
        "messages": [{"role": "user", "content": "go"}],
        "stream": True,
        "n": 2,
    }
    answer = chat.post(body)
    lines = [line for line in answer.text.splitlines() if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    errors = [chunk for chunk in chunks if "error" in chunk]
    assert len(errors) == 1 and chunks[-1] == errors[0]  # one error, and nothing after it
    assert errors[0]["error"]["type"] == "server_error"
    assert {c["index"] for chunk in chunks[:-1] for c in chunk["choices"]} <= {0, 1}


def test_logprobs_stop_and_seed_reach_a_chat_upstream(chat: ChatGateway) -> None:
    client = chat.client()
    completion = client.chat.completions.create(
        model="chat-model",
        messages=[{"role": "user", "content": "two words"}],
        logprobs=True,
        top_logprobs=2,
        stop=["END"],
        seed=7,
    )
    sent = chat.fake.last
    assert (sent["logprobs"], sent["top_logprobs"], sent["stop"], sent["seed"]) == (
        True,
        2,
        ["END"],
        7,
    )
    logprobs = completion.choices[0].logprobs
    assert logprobs is not None and logprobs.content
    assert (
        "".join(entry.token for entry in logprobs.content) == completion.choices[0].message.content
    )
    assert len(logprobs.content[0].top_logprobs) == 2

    client.chat.completions.create(
        model="claude", messages=[{"role": "user", "content": "hi"}], stop="END"
    )
    assert chat.claude.last["stop_sequences"] == ["END"]


def test_images_reach_each_wire(chat: ChatGateway) -> None:
    url = "https://example.com/cat.png"
    content = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
    ]
    client = chat.client()
    client.chat.completions.create(
        model="resp-model", messages=[{"role": "user", "content": content}]
    )
    [_, image] = chat.fake.last["input"][0]["content"]
    assert image == {"type": "input_image", "image_url": url, "detail": "low"}
    client.chat.completions.create(
        model="chat-model", messages=[{"role": "user", "content": content}]
    )
    [_, image] = chat.fake.last["messages"][0]["content"]
    assert image == {"type": "image_url", "image_url": {"url": url, "detail": "low"}}


def test_a_cut_answer_ends_with_length(chat: ChatGateway) -> None:
    chat.fake.script(Reply(text="Half an ans", finish_reason="length"))
    completion = chat.client().chat.completions.create(
        model="chat-model", messages=[{"role": "user", "content": "Long story"}], max_tokens=5
    )
    assert completion.choices[0].finish_reason == "length"
    assert chat.fake.last["max_tokens"] == 5


@pytest.mark.parametrize(
    ("body", "status", "param", "code"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, 400, "model", None),
        ({"model": "resp-model"}, 400, "messages", None),
        ({"model": "resp-model", "messages": []}, 400, "messages", None),
        ({"model": "resp-model", "messages": [{"role": "robot"}]}, 400, "messages[0].role", None),
        (
            {
                "model": "resp-model",
                "messages": [{"role": "user", "content": "x"}],
                "temperature": 3,
            },
            400,
            "temperature",
            None,
        ),
        (
            {
                "model": "resp-model",
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
                ],
            },
            400,
            "messages[1].content[0].type",
            None,
        ),
        (
            {"model": "resp-model", "messages": [{"role": "user", "content": "x"}], "n": 17},
            400,
            "n",
            "unsupported_value",
        ),
        (
            {
                "model": "resp-model",
                "messages": [{"role": "user", "content": "x"}],
                "tool_choice": {"type": "function"},
            },
            400,
            "tool_choice.function.name",
            None,
        ),
        (
            {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]},
            404,
            None,
            "model_not_found",
        ),
    ],
    ids=["no-model", "no-messages", "empty", "role", "temperature", "audio", "n", "choice", "404"],
)
def test_a_bad_request_is_refused_naming_its_param(
    chat: ChatGateway, body: dict[str, Any], status: int, param: str | None, code: str | None
) -> None:
    answer = chat.post(body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    if param is not None:
        assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    assert chat.fake.requests == [] and chat.claude.requests == []


def test_the_sdk_raises_openais_errors(chat: ChatGateway) -> None:
    with pytest.raises(openai.AuthenticationError):
        chat.client("sk-wrong-0123456789").chat.completions.create(
            model="resp-model", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(openai.NotFoundError) as missing:
        chat.client().chat.completions.create(
            model="nope", messages=[{"role": "user", "content": "x"}]
        )
    assert missing.value.code == "model_not_found"
    limited = chat.client(LIMITED)
    for _ in range(2):
        limited.chat.completions.create(
            model="resp-model", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(openai.RateLimitError) as refused:
        limited.chat.completions.create(
            model="resp-model", messages=[{"role": "user", "content": "x"}]
        )
    assert refused.value.code == "rate_limit_exceeded"
    assert refused.value.response.headers["retry-after"]


def test_usage_counts_by_key_and_a_project_sees_only_its_own(chat: ChatGateway) -> None:
    chat.client(TEAM_A).chat.completions.create(
        model="chat-model", messages=[{"role": "user", "content": "count me"}]
    )
    chat.post(
        {
            "model": "resp-model",
            "messages": [{"role": "user", "content": "and me"}],
            "stream": True,
        }
    ).raise_for_status()

    def usage(key: str) -> dict[str, Any]:
        answer = httpx.get(
            f"{chat.url}/v1/gateway/console/usage",
            headers={"authorization": f"Bearer {key}"},
            params={"by": "key"},
        )
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    everyone = usage(ADMIN)
    assert everyone["totals"]["requests"] == 2
    assert [group["group"] for group in everyone["groups"]] == ["static:a"]
    assert everyone["totals"]["input_tokens"] == 11 + 5  # the chat fake's, the responses fake's
    assert usage(TEAM_A)["totals"]["requests"] == 2
    theirs = usage(TEAM_B)
    assert theirs["totals"]["requests"] == 0 and theirs["groups"] == []


def test_a_part_a_wire_cannot_carry_is_a_400_naming_the_message(chat: ChatGateway) -> None:
    file = {"type": "file", "file": {"file_id": "file-abc", "filename": "a.pdf"}}
    body = {
        "model": "chat-model",
        "messages": [
            {"role": "system", "content": "Read it."},
            {"role": "user", "content": [{"type": "text", "text": "Summarise:"}, file]},
        ],
    }
    answer = chat.post(body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "messages[1].content[1]"
    assert answer.json()["error"]["code"] == "unsupported_input"
    assert chat.fake.requests == []


def test_a_stream_cut_upstream_ends_in_an_error_the_sdk_raises(chat: ChatGateway) -> None:
    chat.fake.script(Reply(text="one two three four five six", break_after=3))
    body = {"model": "chat-model", "messages": [{"role": "user", "content": "go"}], "stream": True}
    answer = chat.post(body)
    lines = [line for line in answer.text.splitlines() if line]
    assert lines[-1] == "data: [DONE]"
    error = json.loads(lines[-2].removeprefix("data: "))["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "server_error"
    chat.fake.script(Reply(text="one two three four five six", break_after=3))
    stream = chat.client().chat.completions.create(
        model="chat-model", messages=[{"role": "user", "content": "go"}], stream=True
    )
    with pytest.raises(openai.APIError):
        list(stream)
