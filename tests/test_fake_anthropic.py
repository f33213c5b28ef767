"""The fake Anthropic Messages API, driven by the official ``anthropic`` SDK in process."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pydantic
import pytest

from .fake_anthropic import (
    ANTHROPIC_KEY,
    AnthropicReply,
    FakeAnthropic,
    RequestError,
    check_request,
    check_stream_event,
)

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

MODEL = "claude-sonnet-5-5"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.fixture
def fake() -> FakeAnthropic:
    return FakeAnthropic()


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    transport = httpx2.ASGITransport(app=fake.app)
    async with httpx2.AsyncClient(transport=transport) as http:
        yield anthropic.AsyncAnthropic(
            api_key=ANTHROPIC_KEY,
            base_url="http://fake",
            http_client=http,
            max_retries=0,
            _strict_response_validation=True,
        )


@pytest.fixture
async def raw(fake: FakeAnthropic) -> AsyncIterator[httpx2.AsyncClient]:
    """A plain HTTP client, for what the SDK will not send."""
    headers = {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}
    transport = httpx2.ASGITransport(app=fake.app)
    async with httpx2.AsyncClient(
        transport=transport, base_url="http://fake", headers=headers
    ) as http:
        yield http


async def create(client: anthropic.AsyncAnthropic, **params: Any) -> anthropic.types.Message:
    params = {"model": MODEL, "max_tokens": 2048, **params}
    params.setdefault("messages", [{"role": "user", "content": "hello"}])
    message: anthropic.types.Message = await client.messages.create(**params)
    return message


async def refused(client: anthropic.AsyncAnthropic, **params: Any) -> str:
    """The message of the 400 answering these parameters."""
    with pytest.raises(anthropic.BadRequestError) as caught:
        await create(client, **params)
    body: Any = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["request_id"].startswith("req_")
    message: str = body["error"]["message"]
    return message


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_use(tool_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "lookup", "input": {"q": "x"}}


def tool_result(tool_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "42"}


# -- answers -----------------------------------------------------------------------------


async def test_a_plain_answer_echoes_the_last_user_text(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    message = await create(client, system="Be brief.", metadata={"user_id": "u-1"})
    assert message.content[0].text == "echo: hello"
    assert message.stop_reason == "end_turn" and message.model == MODEL
    assert message.usage.input_tokens == fake.input_tokens(fake.last) > 0
    assert message.usage.cache_read_input_tokens == 0
    assert fake.last["system"] == "Be brief." and fake.paths == ["/v1/messages"]
    assert fake.headers[-1]["anthropic-version"]


async def test_the_beta_header_is_recorded(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    await create(client, extra_headers={"anthropic-beta": "fine-grained-tool-streaming"})
    assert fake.headers[-1]["anthropic-beta"] == "fine-grained-tool-streaming"


async def test_a_stream_assembles_into_the_same_message(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    reply = AnthropicReply(
        thinking="Let me look.",
        text="Looking it up.",
        tool_uses=[("toolu_a", "lookup", {"q": "one"}), ("toolu_b", "lookup", {"q": "two"})],
    )
    fake.script(reply, reply)
    whole = await create(client, thinking=THINKING)
    params: Any = {"model": MODEL, "max_tokens": 2048, "thinking": THINKING}
    async with client.messages.stream(messages=[user("hello")], **params) as stream:
        streamed = await stream.get_final_message()
    assert streamed.model_dump(exclude={"id"}) == whole.model_dump(exclude={"id"})
    kinds = [block.type for block in streamed.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    assert streamed.stop_reason == "tool_use"


async def test_the_raw_stream_follows_the_api_sequence(
    fake: FakeAnthropic, raw: httpx2.AsyncClient
) -> None:
    fake.script(AnthropicReply(text="hi there", tool_uses=[("toolu_1", "f", {"a": 1})]))
    body = {"model": MODEL, "max_tokens": 50, "stream": True, "messages": [user("x")]}
    response = await raw.post("/v1/messages", json=body)
    events = [
        (line.removeprefix("event: "), json.loads(data.removeprefix("data: ")))
        for line, data in (chunk.split("\n") for chunk in response.text.strip().split("\n\n"))
    ]
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    starts = [data for name, data in events if name == "content_block_start"]
    opened = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    assert starts[1]["content_block"] == opened
    pieces = [d["delta"]["partial_json"] for _, d in events if d.get("index") == 1 and "delta" in d]
    assert len(pieces) == 3 and json.loads("".join(pieces)) == {"a": 1}
    assert events[0][1]["message"]["stop_reason"] is None
    assert events[-2][1]["usage"]["output_tokens"] > 0


async def test_interleaved_tool_deltas_still_assemble(
    fake: FakeAnthropic, raw: httpx2.AsyncClient, client: anthropic.AsyncAnthropic
) -> None:
    tools = [("toolu_a", "f", {"n": "first"}), ("toolu_b", "g", {"n": "second"})]
    fake.script(AnthropicReply(tool_uses=tools, interleave_tools=True))
    body = {"model": MODEL, "max_tokens": 50, "stream": True, "messages": [user("x")]}
    text = (await raw.post("/v1/messages", json=body)).text
    data = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    deltas = [event["index"] for event in data if event["type"] == "content_block_delta"]
    assert deltas[:4] == [0, 1, 0, 1]
    fake.script(AnthropicReply(tool_uses=tools, interleave_tools=True))
    async with client.messages.stream(model=MODEL, max_tokens=50, messages=[user("x")]) as stream:
        final = await stream.get_final_message()
    assert [(b.id, b.input) for b in final.content] == [(t[0], t[2]) for t in tools]


async def test_stop_sequences_cut_the_text(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(AnthropicReply(text="one two STOP three"))
    message = await create(client, stop_sequences=["STOP"])
    assert message.content[0].text == "one two "
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")


async def test_count_tokens_counts_what_an_answer_reports(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    messages: Any = [user("how many tokens is this?")]
    counted = await client.messages.count_tokens(model=MODEL, messages=messages, system="Hi.")
    message = await create(client, messages=messages, system="Hi.")
    assert counted.input_tokens == message.usage.input_tokens
    assert fake.paths == ["/v1/messages/count_tokens", "/v1/messages"]
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs"):
        await client.messages.count_tokens(
            model=MODEL, messages=messages, extra_body={"max_tokens": 5}
        )


def test_bodies_and_events_can_be_checked_without_a_server() -> None:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 5, "messages": [user("x")]}
    check_request(body)
    check_request({"model": MODEL, "messages": [user("x")]}, "/v1/messages/count_tokens")
    check_request({**body, "top_k": 5})
    with pytest.raises(RequestError, match="top_k: Input should be greater than or equal to 0"):
        check_request({**body, "top_k": -1})
    with pytest.raises(RequestError, match="top_k: Extra inputs are not permitted"):
        check_request({"model": MODEL, "messages": [user("x")], "top_k": 5}, "/v1/count_tokens")
    edits = {"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}
    with pytest.raises(RequestError, match="context_management: Extra inputs are not permitted"):
        check_request({**body, **edits})  # a beta field, refused without its beta
    check_request({**body, **edits}, betas=frozenset({"context-management-2025-06-27"}))
    with pytest.raises(RequestError, match=r"context_management\.edits\.0: Input tag 'bogus'"):
        bogus = {"context_management": {"edits": [{"type": "bogus"}]}}
        check_request({**body, **bogus}, betas=frozenset({"context-management-2025-06-27"}))
    check_request({**body, "temperature": 0.2, "top_p": 0.9})
    thinking = {**body, "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    check_request({**thinking, "top_p": 0.95})
    with pytest.raises(RequestError, match="`top_k` may not be set when thinking is enabled"):
        check_request({**thinking, "top_k": 5})
    with pytest.raises(RequestError, match="`temperature` may only be set to 1"):
        check_request({**thinking, "temperature": 0.2})
    with pytest.raises(RequestError, match="`top_p` must be greater than or equal to 0"):
        check_request({**thinking, "top_p": 0.9})
    with pytest.raises(RequestError, match="temperature: Input should be between 0 and 1"):
        check_request({**body, "temperature": 1.5})
    signed = assistant([{"type": "thinking", "thinking": "t", "signature": "c2ln"}, tool_use()])
    replay = {**body, "messages": [user("x"), signed, user([tool_result()])]}
    check_request(replay)  # signatures are only the issuing fake's business
    with pytest.raises(RequestError, match="Invalid `signature`"):
        FakeAnthropic().check(replay)
    check_stream_event({"type": "ping"})
    check_stream_event({"type": "error", "error": {"type": "overloaded_error", "message": "O"}})
    with pytest.raises(pydantic.ValidationError):
        check_stream_event({"type": "content_block_delta", "index": 0, "delta": {"text": "x"}})


# -- errors ------------------------------------------------------------------------------


async def test_a_scripted_overload_answers_anthropics_error_body(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(AnthropicReply(status=529))
    with pytest.raises(anthropic.OverloadedError) as caught:
        await create(client)
    body: Any = caught.value.body
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert body["type"] == "error" and body["request_id"].startswith("req_")


async def test_a_rate_limit_says_when_to_retry(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(AnthropicReply(status=429, retry_after=3))
    with pytest.raises(anthropic.RateLimitError) as caught:
        await create(client)
    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.body["error"]["type"] == "rate_limit_error"


async def test_a_stream_can_fail_midway_with_an_error_event(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(AnthropicReply(text="a long answer", stream_error_after=4))
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        async with client.messages.stream(model=MODEL, max_tokens=50, messages=[user("x")]) as s:
            async for event in s:
                seen.append(event.type)
    assert "message_stop" not in seen and "content_block_start" in seen


async def test_a_stream_can_be_cut(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.script(AnthropicReply(text="a long answer", break_after=3))
    with pytest.raises(anthropic.APIConnectionError):
        async with client.messages.stream(model=MODEL, max_tokens=50, messages=[user("x")]) as s:
            async for _ in s:
                pass


async def test_a_wrong_key_or_no_version_is_refused(
    fake: FakeAnthropic, raw: httpx2.AsyncClient
) -> None:
    body = {"model": MODEL, "max_tokens": 5, "messages": [user("x")]}
    wrong = await raw.post("/v1/messages", json=body, headers={"x-api-key": "nope"})
    assert wrong.status_code == 401
    assert wrong.json()["error"] == {"type": "authentication_error", "message": "invalid x-api-key"}
    del raw.headers["anthropic-version"]
    unversioned = await raw.post("/v1/messages", json=body)
    assert unversioned.status_code == 400 and "anthropic-version" in unversioned.text
    assert len(fake.requests) == 2  # recorded all the same


async def test_missing_max_tokens_and_unknown_fields_are_refused(
    client: anthropic.AsyncAnthropic, raw: httpx2.AsyncClient
) -> None:
    response = await raw.post("/v1/messages", json={"model": MODEL, "messages": [user("x")]})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "max_tokens: Field required"
    message = await refused(client, extra_body={"frequency_penalty": 0.5})
    assert message == "frequency_penalty: Extra inputs are not permitted"
    nested = [user([{"type": "text", "text": "x", "colour": "red"}])]
    message = await refused(client, messages=nested)
    assert message == "messages.0.user.content.0.text.colour: Extra inputs are not permitted"
    message = await refused(client, extra_body={"max_tokens": "5"})
    assert message == "max_tokens: Input should be a valid integer"


async def test_context_window(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> None:
    fake.context_window = 5
    message = await refused(client, messages=[user("a rather long question " * 4)])
    assert message.startswith("prompt is too long: ") and message.endswith("> 5 maximum")


# -- messages ----------------------------------------------------------------------------


async def test_roles_must_alternate_and_start_with_the_user(
    client: anthropic.AsyncAnthropic,
) -> None:
    message = await refused(client, messages=[user("a"), user("b")])
    assert message.startswith('messages: roles must alternate between "user" and "assistant"')
    message = await refused(client, messages=[assistant("a"), user("b")])
    assert message == 'messages: first message must use the "user" role'
    message = await refused(client, messages=[{"role": "system", "content": "x"}, user("b")])
    assert message == "messages.0.role: Input should be 'user' or 'assistant'"
    assert await refused(client, messages=[]) == "messages: at least one message is required"


async def test_every_tool_use_is_answered_first_thing_next(
    client: anthropic.AsyncAnthropic,
) -> None:
    unanswered = [user("q"), assistant([tool_use()]), user("go on")]
    assert "`tool_use` ids were found without `tool_result`" in await refused(
        client, messages=unanswered
    )
    late = [
        user("q"),
        assistant([tool_use()]),
        user([{"type": "text", "text": "r"}, tool_result()]),
    ]
    assert "`tool_result` blocks must come first" in await refused(client, messages=late)
    stray = [user("q"), assistant([tool_use()]), user([tool_result(), tool_result("toolu_9")])]
    assert "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9" in await refused(
        client, messages=stray
    )
    bad = [user("q"), assistant([tool_use("call.1")]), user([tool_result("call.1")])]
    assert "String should match pattern" in await refused(client, messages=bad)
    good = [
        user("q"),
        assistant([tool_use()]),
        user([tool_result(), {"type": "text", "text": "r"}]),
    ]
    await create(client, messages=good)
    dotted: Any = [{"name": "files.read", "input_schema": {"type": "object"}}]
    assert "tools.0.custom.name: String should match pattern" in await refused(client, tools=dotted)


async def test_images_must_be_real(client: anthropic.AsyncAnthropic) -> None:
    def image(source: dict[str, Any]) -> list[dict[str, Any]]:
        return [user([{"type": "image", "source": source}, {"type": "text", "text": "what?"}])]

    png = {"type": "base64", "media_type": "image/png", "data": PNG}
    await create(client, messages=image(png))
    await create(client, messages=image({"type": "url", "url": "https://x.test/a.png"}))
    assert "URL must use https" in await refused(
        client, messages=image({"type": "url", "url": "http://x.test/a.png"})
    )
    assert "invalid base64" in await refused(client, messages=image({**png, "data": "!!"}))
    assert await refused(client, messages=image({**png, "media_type": "image/gif"})) == (
        "Image does not match the provided media type image/gif"
    )
    assert "Input should be 'image/jpeg'" in await refused(
        client, messages=image({**png, "media_type": "image/bmp"})
    )
    pdf = {"type": "base64", "media_type": "application/pdf", "data": PNG}
    document = [user([{"type": "document", "source": pdf}, {"type": "text", "text": "sum up"}])]
    message = await refused(client, messages=document)
    assert message == "Document does not match the provided media type application/pdf"


# -- thinking ----------------------------------------------------------------------------


async def test_a_signed_thinking_block_round_trips_and_a_tampered_one_is_refused(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(
        AnthropicReply(thinking="I should call lookup.", tool_uses=[("toolu_1", "lookup", {})])
    )
    first = await create(client, thinking=THINKING)
    thinking = first.content[0]
    assert thinking.type == "thinking" and thinking.signature == fake.sign(thinking.thinking)
    history = [user("hello"), first.to_param(), user([tool_result()])]
    await create(client, thinking=THINKING, messages=history)
    assert fake.replayed_thinking() == [thinking.model_dump()]
    tampered = {**thinking.model_dump(), "thinking": "I should not."}
    history[1] = assistant([tampered, tool_use()])
    assert await refused(client, thinking=THINKING, messages=history) == (
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    )


async def test_redacted_thinking_must_be_issued_by_the_fake(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.script(AnthropicReply(redacted_thinking="opaque-1", text="done"))
    first = await create(client, thinking=THINKING)
    assert first.content[0].type == "redacted_thinking"
    await create(client, messages=[user("hello"), first.to_param(), user("more")])
    forged = assistant(
        [{"type": "redacted_thinking", "data": "forged"}, {"type": "text", "text": "x"}]
    )
    assert "Invalid `data` in `redacted_thinking`" in await refused(
        client, messages=[user("hello"), forged, user("more")]
    )


async def test_a_tool_turn_continued_with_thinking_must_start_with_thinking(
    client: anthropic.AsyncAnthropic,
) -> None:
    history = [user("q"), assistant([tool_use()]), user([tool_result()])]
    message = await refused(client, thinking=THINKING, messages=history)
    assert message.startswith("messages.1.content.0.type: Expected `thinking` or `redacted_")
    assert "but found `tool_use`" in message
    await create(client, messages=history)  # without thinking it is fine


async def test_thinking_budgets_and_forced_tools_are_checked(
    client: anthropic.AsyncAnthropic,
) -> None:
    small = await refused(client, thinking={"type": "enabled", "budget_tokens": 1000})
    assert small == "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    large = await refused(client, max_tokens=1024, thinking=THINKING)
    assert large == "`max_tokens` must be greater than `thinking.budget_tokens`."
    tools: Any = [{"name": "lookup", "input_schema": {"type": "object"}}]
    forced = await refused(
        client, thinking={"type": "adaptive"}, tools=tools, tool_choice={"type": "any"}
    )
    assert forced == "Thinking may not be enabled when tool_choice forces tool use."
    await create(
        client, thinking={"type": "adaptive"}, output_config={"effort": "low"}, tools=tools
    )


async def test_enabled_thinking_thinks_even_when_not_scripted(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    message = await create(client, thinking=THINKING)
    assert [block.type for block in message.content] == ["thinking", "text"]
    omitted = await create(client, thinking={**THINKING, "display": "omitted"})
    assert omitted.content[0].thinking == "" and omitted.content[0].signature


# -- prompt caching ----------------------------------------------------------------------


async def test_at_most_four_cache_breakpoints(client: anthropic.AsyncAnthropic) -> None:
    cached = {"type": "ephemeral"}
    blocks: Any = [{"type": "text", "text": f"part {n}", "cache_control": cached} for n in range(5)]
    message = await refused(client, messages=[user(blocks)])
    assert message == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    await create(client, messages=[user(blocks[:4])])


def usage(message: anthropic.types.Message) -> tuple[int, int, int]:
    """Input tokens, cache writes and cache reads."""
    counts = message.usage
    return (
        counts.input_tokens,
        counts.cache_creation_input_tokens or 0,
        counts.cache_read_input_tokens or 0,
    )


async def test_a_cached_prefix_is_written_then_read(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    prompt = "A long system prompt. " * 40
    system: Any = [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}]
    first = await create(client, system=system, messages=[user("first")])
    second = await create(client, system=system, messages=[user("second question")])
    (_, written, read), (_, rewritten, reread) = usage(first), usage(second)
    assert written == reread > 200 and read == rewritten == 0
    for message, request in zip((first, second), fake.requests, strict=True):
        assert sum(usage(message)) == fake.input_tokens(request)
    fake.reset()  # forgets the cache: written again
    assert usage(await create(client, system=system, messages=[user("first")]))[1] == written


async def test_a_moving_breakpoint_reads_the_last_turn_from_the_cache(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    def marked(text: str) -> dict[str, Any]:
        block = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
        return user([block])

    turn = [user("a first question, long enough " * 20), assistant("an answer")]
    first = await create(client, messages=[marked("a first question, long enough " * 20)])
    second = await create(client, messages=[*turn, marked("and then?")])
    assert usage(second)[2] == usage(first)[1] > 0  # found 2 blocks before the breakpoint
    assert usage(second)[1] == fake.input_tokens(fake.last) - usage(first)[1] - usage(second)[0]
    unmarked = await create(client, messages=[*turn, user("and then?")])
    assert usage(unmarked)[1:] == (0, 0)  # no breakpoint, no caching
    automatic = await create(
        client, messages=[*turn, user("and then?")], cache_control={"type": "ephemeral"}
    )
    assert usage(automatic)[2] == usage(second)[1] + usage(second)[2]


async def test_each_key_has_its_own_cache(fake: FakeAnthropic) -> None:
    fake.api_keys.add("sk-ant-other")
    block = {"type": "text", "text": "cached " * 50, "cache_control": {"type": "ephemeral"}}
    body = {"model": MODEL, "max_tokens": 5, "messages": [user([block])]}
    transport = httpx2.ASGITransport(app=fake.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://fake") as http:
        for key, expected in [(ANTHROPIC_KEY, 0), (ANTHROPIC_KEY, 1), ("sk-ant-other", 0)]:
            headers = {"authorization": f"Bearer {key}", "anthropic-version": "2026-10-21"}
            answer = (await http.post("/v1/messages", json=body, headers=headers)).json()
            assert bool(answer["usage"]["cache_read_input_tokens"]) == bool(expected)
