"""``wire_api: anthropic`` end to end: the strict ``openai`` SDK through the gateway to a
strict fake of the Messages API, which refuses whatever the real API refuses (roles that do
not alternate, a tool_use left unanswered, a thinking block not replayed or altered, ...)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway import create_app, parse_config

from .conftest import Gateway
from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

MODEL = "claude-sonnet-5-5"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def claude(
    anthropic_upstream: tuple[FakeAnthropic, str],
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
) -> Iterator[tuple[Gateway, FakeAnthropic]]:
    fake, url = anthropic_upstream
    fake.reset()
    chat, chat_url = fake_upstream
    config = parse_config(
        {
            "session": {"backend": "sqlite", "sqlite": {"path": str(tmp_path / "s.db")}},
            "providers": {
                "claude": {"wire_api": "anthropic", "base_url": url, "api_key": ANTHROPIC_KEY},
                "wrong-key": {"wire_api": "anthropic", "base_url": url, "api_key": "sk-wrong-1234"},
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
                "claude": {"provider": "claude", "upstream_model": MODEL},
                "claude-other": {"provider": "claude", "upstream_model": "claude-haiku-5"},
                "claude-wrong-key": {"provider": "wrong-key", "upstream_model": MODEL},
                "claude-small": {
                    "provider": "claude",
                    "upstream_model": MODEL,
                    "context_window": 60,
                },
                "chat-model": {"provider": "chat", "upstream_model": "upstream-chat"},
                "resp-model": {"provider": "responses", "upstream_model": "upstream-resp"},
            },
        },
        env={},
    )
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, chat)
        yield gateway, fake
        for client in gateway.clients:
            client.close()


def streamed(client: openai.OpenAI, **request: Any) -> tuple[list[Any], Any]:
    events = list(client.responses.create(stream=True, **request))
    return events, events[-1].response


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_chain_with_thinking_replays_the_signed_blocks(
    claude: tuple[Gateway, FakeAnthropic], stream: bool
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(
        AnthropicReply(
            thinking="Paris, so weather.", tool_uses=[("toolu_1", "get_weather", {"city": "Paris"})]
        ),
        AnthropicReply(text="Sunny in Paris."),
    )
    request: dict[str, Any] = {
        "model": "claude",
        "input": "Weather in Paris?",
        "tools": [WEATHER],
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    if stream:
        events, first = streamed(client, **request)
        kinds = [event.type for event in events]
        assert "response.reasoning_text.delta" in kinds
        assert "response.reasoning_summary_text.delta" in kinds
        assert "response.function_call_arguments.delta" in kinds
        assert [e.sequence_number for e in events] == list(range(len(events)))
    else:
        first = client.responses.create(**request)
    reasoning, call = first.output
    assert reasoning.type == "reasoning" and call.type == "function_call"
    assert reasoning.summary[0].text == "Paris, so weather."
    assert reasoning.encrypted_content is not None
    assert "Paris, so weather." not in reasoning.encrypted_content  # sealed
    assert (call.call_id, json.loads(call.arguments)) == ("toolu_1", {"city": "Paris"})
    assert fake.last["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert fake.headers[-1]["x-api-key"] == ANTHROPIC_KEY
    assert fake.headers[-1]["anthropic-version"] == "2023-06-01"

    output = {"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"}
    second_request = {**request, "input": [output], "previous_response_id": first.id}
    if stream:
        second = streamed(client, **second_request)[1]
    else:
        second = client.responses.create(**second_request)
    assert second.output_text == "Sunny in Paris."
    signed = {
        "type": "thinking",
        "thinking": "Paris, so weather.",
        "signature": fake.sign("Paris, so weather."),
    }
    assert fake.replayed_thinking() == [signed]
    assistant, results = fake.last["messages"][1:]
    assert assistant["content"][0] == signed
    assert results["content"][0]["tool_use_id"] == "toolu_1"


def test_a_stateless_client_carries_the_thinking_in_encrypted_content(
    claude: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(
        AnthropicReply(thinking="Think.", tool_uses=[("toolu_9", "get_weather", {"city": "Oslo"})]),
        AnthropicReply(text="Cold."),
    )
    request: dict[str, Any] = {
        "model": "claude",
        "tools": [WEATHER],
        "reasoning": {"effort": "low"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    first = client.responses.create(input="Oslo?", **request)
    items = [item.model_dump(exclude_none=True) for item in first.output]
    output = {"type": "function_call_output", "call_id": "toolu_9", "output": "-3C"}
    question = {"role": "user", "content": "Oslo?"}
    second = client.responses.create(input=[question, *items, output], **request)
    assert second.output_text == "Cold."
    assert fake.replayed_thinking()[0]["thinking"] == "Think."

    tampered = dict(items[0], encrypted_content=items[0]["encrypted_content"][:-4] + "AAAA")
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(input=[question, tampered, items[1], output], **request)
    assert refused.value.code == "invalid_encrypted_content"
    assert refused.value.param == "input[1].encrypted_content"


def test_another_model_never_receives_the_signatures(
    claude: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(
        AnthropicReply(thinking="Hmm.", tool_uses=[("toolu_2", "get_weather", {"city": "Rome"})]),
        AnthropicReply(text="Warm.", thinking="Again."),
    )
    gateway.fake.script(Reply(text="From chat."))
    reasoning = {"effort": "low"}
    first = client.responses.create(
        model="claude", input="Rome?", tools=[WEATHER], reasoning=reasoning
    )  # type: ignore[list-item]
    output = {"type": "function_call_output", "call_id": "toolu_2", "output": "25C"}
    on_chat = client.responses.create(
        model="chat-model",
        input=[output],
        previous_response_id=first.id,
        tools=[WEATHER],  # type: ignore[list-item]
    )
    sent = json.dumps(gateway.fake.last)
    assert "signature" not in sent and "gwr1." not in sent and "encrypted_content" not in sent

    on_responses = client.responses.create(
        model="resp-model", input="Then?", previous_response_id=on_chat.id
    )
    sent = json.dumps(gateway.fake.last)
    assert "gwr1." not in sent and "Hmm." not in sent  # no reasoning of Claude's goes there
    assert "Rome?" in sent and "From chat." in sent  # the visible turns do
    back = client.responses.create(
        model="claude-other",
        input="And now?",
        previous_response_id=on_responses.id,
        reasoning=reasoning,
    )
    assert back.status == "completed"
    assert fake.replayed_thinking() == []  # claude-haiku-5 gets none of claude-sonnet's
    roles = [m["role"] for m in fake.last["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_usage_counts_cache_reads_and_writes(claude: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = claude
    client = gateway.client()
    terse = "You are terse. " * 20  # instructions are the request's own: sent on each turn
    first = client.responses.create(model="claude", instructions=terse, input="one")
    second = client.responses.create(
        model="claude", instructions=terse, input="two", previous_response_id=first.id
    )
    assert first.usage is not None and second.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    written = first.usage.model_dump()["input_tokens_details"]["cache_write_tokens"]
    assert written > 0
    assert second.usage.input_tokens_details.cached_tokens > 0
    sent = fake.last
    # What the response reports is what the provider counted, cache reads and writes included.
    assert second.usage.input_tokens == fake.input_tokens(sent)
    metrics = httpx.get(f"{gateway.url}/metrics").text
    counted = {
        kind: float(value)
        for kind, value in re.findall(
            r'gateway_tokens_total\{[^}]*kind="(\w+)"[^}]*\} (\S+)', metrics
        )
    }
    assert counted["cached"] == second.usage.input_tokens_details.cached_tokens
    assert counted["input"] == first.usage.input_tokens + second.usage.input_tokens


def test_input_tokens_are_counted_by_the_provider(claude: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = claude
    answer = httpx.post(
        f"{gateway.url}/v1/responses/input_tokens",
        json={"model": "claude", "input": "How many tokens is this?", "instructions": "Count."},
    )
    assert answer.status_code == 200, answer.text
    assert fake.paths[-1] == "/v1/messages/count_tokens"
    assert answer.json()["input_tokens"] == fake.input_tokens(fake.last)


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        (AnthropicReply(status=529), 503, "upstream_overloaded"),
        (AnthropicReply(status=429, retry_after=7), 429, "rate_limit_exceeded"),
        (
            AnthropicReply(status=400, error_message="messages.0: bad thing"),
            400,
            "upstream_rejected",
        ),
    ],
)
def test_provider_errors(
    claude: tuple[Gateway, FakeAnthropic], reply: AnthropicReply, status: int, code: str
) -> None:
    gateway, fake = claude
    fake.script(reply)
    answer = httpx.post(f"{gateway.url}/v1/responses", json={"model": "claude", "input": "hi"})
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code
    if status in (429, 503):
        assert answer.headers["retry-after"] == ("7" if status == 429 else "1")
    if status == 400:
        assert "messages.0: bad thing" in answer.json()["error"]["message"]
    assert gateway.stored_rows() == 0  # nothing half-written


def test_a_refused_key_is_502_and_never_shown(claude: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, _ = claude
    answer = httpx.post(
        f"{gateway.url}/v1/responses", json={"model": "claude-wrong-key", "input": "hi"}
    )
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "upstream_auth_failed"
    assert "wrong-key" in answer.json()["error"]["message"] and "sk-wrong" not in answer.text


def test_an_overloaded_stream_fails_and_is_stored_failed(
    claude: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = claude
    client = gateway.client()
    fake.script(AnthropicReply(text="A long answer that breaks.", stream_error_after=4))
    events, final = streamed(client, model="claude", input="hi")
    assert events[-1].type == "response.failed"
    assert final.error is not None and final.error.code == "server_error"
    assert "overloaded" in final.error.message
    assert client.responses.retrieve(final.id).status == "failed"


def test_a_prompt_too_long_is_truncated_under_truncation_auto(
    claude: tuple[Gateway, FakeAnthropic],
) -> None:
    gateway, fake = claude
    client = gateway.client()
    previous = None
    for n in range(4):
        turn = client.responses.create(
            model="claude", input=f"message number {n} " * 4, previous_response_id=previous
        )
        previous = turn.id
    fake.context_window = 80
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="claude", input="last", previous_response_id=previous)
    assert refused.value.code == "context_length_exceeded"
    shortened = client.responses.create(
        model="claude", input="last", previous_response_id=previous, truncation="auto"
    )
    assert shortened.status == "completed"
    assert len(fake.last["messages"]) < 9


def test_compaction_works_on_this_wire(claude: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = claude
    client = gateway.client()
    first = client.responses.create(model="claude", input="Remember 42.")
    fake.script(AnthropicReply(text="Summary: the number is 42."))
    compacted = httpx.post(
        f"{gateway.url}/v1/responses/compact",
        json={"model": "claude", "previous_response_id": first.id},
    )
    assert compacted.status_code == 200, compacted.text
    assert compacted.json()["output"][-1]["type"] == "compaction"
    assert "Remember 42." in json.dumps(fake.last["messages"])


@pytest.mark.anyio
async def test_the_agents_sdk_runs_a_function_tool_on_claude(
    claude: tuple[Gateway, FakeAnthropic],
) -> None:
    from agents import (
        Agent,
        ModelSettings,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai.types.shared import Reasoning

    gateway, fake = claude
    set_tracing_disabled(True)

    @function_tool
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    fake.script(
        AnthropicReply(thinking="Look it up.", tool_uses=[("toolu_7", "lookup", {"city": "Oslo"})]),
        AnthropicReply(text="It is sunny in Oslo."),
    )
    async with openai.AsyncOpenAI(
        base_url=f"{gateway.url}/v1", api_key="k", max_retries=0, _strict_response_validation=True
    ) as client:
        agent = Agent(
            name="assistant",
            instructions="Be brief.",
            model=OpenAIResponsesModel(model="claude", openai_client=client),
            model_settings=ModelSettings(reasoning=Reasoning(effort="low")),
            tools=[lookup],
        )
        result = await Runner.run(agent, "weather in Oslo?", auto_previous_response_id=True)
    assert result.final_output == "It is sunny in Oslo."
    assert fake.replayed_thinking()[0]["thinking"] == "Look it up."
    [result_block] = fake.last["messages"][-1]["content"]
    assert (result_block["tool_use_id"], result_block["content"]) == ("toolu_7", "sunny in Oslo")
    assert fake.last["system"][0]["text"] == "Be brief."


def test_automatic_compaction_works_on_this_wire(claude: tuple[Gateway, FakeAnthropic]) -> None:
    gateway, fake = claude
    client = gateway.client()
    previous = None
    for n in range(3):
        previous = client.responses.create(
            model="claude", input=f"fact number {n} " * 10, previous_response_id=previous
        ).id
    fake.script(AnthropicReply(text="Summary: three facts."), AnthropicReply(text="Fresh."))
    response = client.responses.create(
        model="claude",
        input="go on",
        previous_response_id=previous,
        extra_body={"context_management": [{"type": "compaction", "compact_threshold": 50}]},
    )
    assert [item.type for item in response.output] == ["compaction", "message"]
    assert response.output_text == "Fresh."
    answered = fake.last["messages"]
    assert [m["role"] for m in answered] == ["user"]  # the kept user turns and the summary
    assert "Summary: three facts." in json.dumps(answered)
