"""Traces over OTLP/HTTP: the span tree of a chained turn with a retry, a fallback and an
MCP call on each wire, streamed and not, over HTTP and WebSocket, exported to a real
receiver; the GenAI attributes; a client's ``traceparent``; no content unless asked; a
collector that is down or slow never fails a turn."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from gateway import create_app, parse_config

from .fake_anthropic import ANTHROPIC_KEY, AnthropicReply, FakeAnthropic
from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .mcp_gateway import ROLL, dice_tool
from .mcp_server import McpServer
from .otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from .servers import refusing_url, serve

pytestmark = [pytest.mark.api]

ERROR = {"error": {"message": "upstream trouble", "type": "server_error"}}
PROMPT = "the secret prompt 7c1e9b"
CLIENT_SECRET = "sk-client-secret-5d4c3b2a"
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"
WIRES = ("chat_completions", "responses", "anthropic")


def wire_config(
    wire: str, urls: dict[str, str], db: Path, dice: McpServer, otlp: dict[str, Any] | None
) -> dict[str, Any]:
    """Two providers of ``wire``: ``primary`` retried on the first, then falling back to
    ``backup`` on the second; MCP run by the gateway."""
    if wire == "anthropic":
        provider = {"wire_api": "anthropic", "base_url": urls["anthropic"]}
        provider["api_key"] = ANTHROPIC_KEY
    else:
        provider = {"wire_api": wire, "base_url": f"{urls['openai']}/v1", "api_key": UPSTREAM_KEY}
        if wire == "responses":
            provider["mcp"] = "gateway"
    return {
        "session": {"backend": "sqlite", "sqlite": {"path": str(db)}},
        "providers": {"east": provider, "west": dict(provider)},
        "models": {
            "primary": {
                "provider": "east",
                "upstream_model": "model-primary",
                "fallbacks": ["backup"],
                "retry": {"attempts": 2, "max_wait_seconds": 0.05},
            },
            "backup": {"provider": "west", "upstream_model": "model-backup"},
        },
        "mcp": {"allowed_servers": [dice.url], "call_timeout_seconds": 5},
        "observability": {"otlp": otlp} if otlp is not None else {},
    }


@contextmanager
def traced_gateway(
    wire: str,
    fakes: tuple[tuple[FakeUpstream, str], tuple[FakeAnthropic, str]],
    tmp_path: Path,
    dice: McpServer,
    **otlp: Any,
) -> Iterator[str]:
    (_, openai_url), (anthropic, anthropic_url) = fakes
    anthropic.reset()
    urls = {"openai": openai_url, "anthropic": anthropic_url}
    settings = {"export_timeout_seconds": 2, **otlp}
    config = parse_config(wire_config(wire, urls, tmp_path / "s.db", dice, settings), env={})
    with serve(create_app(config)) as url:
        yield url  # the spans are all exported once the app has stopped


def script_chained_turn(
    wire: str, fakes: tuple[tuple[FakeUpstream, str], tuple[FakeAnthropic, str]]
) -> None:
    """Two failures of ``primary``, ``backup`` calling the MCP tool, then an answer."""
    (openai, _), (anthropic, _) = fakes
    if wire == "anthropic":
        anthropic.script(
            AnthropicReply(text="first answer"),
            AnthropicReply(status=529),
            AnthropicReply(status=503),
            AnthropicReply(tool_uses=[("toolu_1", ROLL, {"sides": 6})]),
            AnthropicReply(text="You rolled a six."),
        )
        return
    openai.script(
        Reply(text="first answer"),
        Reply(status=503, error_body=ERROR),
        Reply(status=502, error_body=ERROR),
        Reply(tool_calls=[("c1", ROLL, '{"sides": 6}')], finish_reason="tool_calls"),
        Reply(text="You rolled a six."),
    )


@pytest.fixture
def fakes(
    fake_upstream: tuple[FakeUpstream, str], anthropic_upstream: tuple[FakeAnthropic, str]
) -> tuple[tuple[FakeUpstream, str], tuple[FakeAnthropic, str]]:
    return fake_upstream, anthropic_upstream


def http_turns(
    url: str, dice: McpServer, stream: bool, headers: dict[str, str], traced: bool = True
) -> list[str]:
    """The first turn, then the chained one with the MCP tool; their response ids."""
    ids: list[str] = []
    with httpx.Client(base_url=url, timeout=30, headers=headers) as client:
        for body in (
            {"model": "primary", "input": PROMPT},
            {"model": "primary", "input": "roll a die", "tools": [dice_tool(dice)]},
        ):
            if ids:
                body["previous_response_id"] = ids[-1]
            if stream:
                with client.stream("POST", "/v1/responses", json={**body, "stream": True}) as sse:
                    assert sse.status_code == 200
                    lines = [line for line in sse.iter_lines() if line.startswith("data: ")]
                done = json.loads(lines[-1][6:])
                assert done["type"] == "response.completed", done
                ids.append(done["response"]["id"])
            else:
                answer = client.post("/v1/responses", json=body)
                assert answer.status_code == 200, answer.text
                assert answer.headers.get("traceparent", "-").startswith("00-") is traced
                ids.append(answer.json()["id"])
    return ids


def socket_turns(url: str, dice: McpServer) -> list[str]:
    ids: list[str] = []
    ws = url.replace("http://", "ws://") + "/v1/responses"
    with connect(ws, additional_headers={"Authorization": f"Bearer {CLIENT_SECRET}"}) as socket:
        for body in (
            {"model": "primary", "input": PROMPT},
            {"model": "primary", "input": "roll a die", "tools": [dice_tool(dice)]},
        ):
            if ids:
                body["previous_response_id"] = ids[-1]
            socket.send(json.dumps({"type": "response.create", **body}))
            while True:
                event = json.loads(socket.recv(timeout=30))
                if event["type"] in ("response.completed", "response.failed", "error"):
                    break
            assert event["type"] == "response.completed", event
            ids.append(event["response"]["id"])
    return ids


def turn_span(receiver: Receiver, response_id: str) -> ReceivedSpan:
    (found,) = [
        span
        for span in receiver.by_name("turn ")
        if span.attributes.get("gen_ai.response.id") == response_id
    ]
    return found


def assert_chained_tree(
    receiver: Receiver, ids: list[str], stream: bool, *, resolved: bool = True
) -> ReceivedSpan:
    """The chained turn's spans: resolve, two failed attempts, the fallback's tool call,
    the MCP call, the answer, the saves; returns the turn's span."""
    turn = turn_span(receiver, ids[1])
    assert turn.attributes["gateway.previous_response_id"] == ids[0]
    assert turn.attributes["gateway.status"] == "completed"
    assert turn.attributes["gen_ai.request.model"] == "primary"
    assert turn.attributes["gateway.stream"] is stream
    names = [span.name for span in receiver.children(turn)]
    # A streamed turn is stored in_progress once its first model call answers; a turn on
    # a WebSocket chains from the response the socket holds, without reading the store.
    assert names == [
        *(["resolve history"] if resolved else []),
        "chat model-primary",
        "chat model-primary",
        "chat model-backup",
        *(["store save"] if stream else []),
        f"execute_tool {ROLL.removeprefix('mcp__dice__')}",
        "chat model-primary",
        "store save",
    ], names
    attempts = [s for s in receiver.children(turn) if s.name.startswith("chat ")]
    assert [a.kind for a in attempts] == ["client"] * 4
    assert [a.status for a in attempts] == [2, 2, 0, 0]
    assert attempts[0].attributes["gateway.outcome"].startswith("http_5")
    assert attempts[2].attributes["gateway.deployment"] == "west/model-backup"
    assert attempts[2].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert attempts[3].attributes["gen_ai.response.finish_reasons"] == ["stop"]
    answered = attempts[3].attributes
    assert answered["gen_ai.operation.name"] == "chat"
    assert answered["gen_ai.request.model"] == answered["gen_ai.response.model"]
    assert answered["gen_ai.usage.input_tokens"] > 0
    assert answered["gen_ai.usage.output_tokens"] > 0
    assert answered["server.address"] == "127.0.0.1"
    assert answered["gateway.key"] == "east#0"
    if stream:
        assert answered["gateway.time_to_first_token"] >= 0
    events = [name for name, _ in turn.events]
    assert "gateway.retry" in events and "gateway.fallback" in events
    (tool,) = [s for s in receiver.children(turn) if s.name.startswith("execute_tool")]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.type"] == "extension"
    assert tool.attributes["gateway.mcp.server"] == "dice"
    if resolved:
        resolve = receiver.children(turn)[0]
        assert resolve.attributes["gateway.history.depth"] == 1
        # No turn chained from the first before: its chain is walked, not found kept.
        assert resolve.attributes["gateway.history.cache_hit"] is False
        assert resolve.attributes["gateway.history.source"] == "store"
    return turn


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("wire", WIRES)
def test_a_chained_turn_is_one_tree_of_spans_over_http(
    wire: str, stream: bool, fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver() as receiver:
        with traced_gateway(wire, fakes, tmp_path, dice, endpoint=receiver.url) as url:
            script_chained_turn(wire, fakes)
            ids = http_turns(url, dice, stream, {"Authorization": f"Bearer {CLIENT_SECRET}"})
        turn = assert_chained_tree(receiver, ids, stream)
        (request,) = [s for s in receiver.spans if s.span_id == turn.parent_id]
        assert request.kind == "server" and request.name == "POST /v1/responses"
        assert request.attributes["http.response.status_code"] == 200
        assert turn.resource["service.name"] == "responses-gateway"
        # Content capture is off by default: neither the prompt nor a header is exported.
        exported = b"".join(receiver.bodies)
        assert PROMPT.encode() not in exported
        assert CLIENT_SECRET.encode() not in exported
        assert UPSTREAM_KEY.encode() not in exported


@pytest.mark.parametrize("wire", WIRES)
def test_websocket_turns_start_their_own_traces_linked_to_the_socket(
    wire: str, fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver() as receiver:
        with traced_gateway(wire, fakes, tmp_path, dice, endpoint=receiver.url) as url:
            script_chained_turn(wire, fakes)
            ids = socket_turns(url, dice)
        turn = assert_chained_tree(receiver, ids, stream=True, resolved=False)
        socket = receiver.one("GET /v1/responses")
        assert socket.kind == "server"
        assert turn.parent_id == "" and turn.trace_id != socket.trace_id
        assert turn.links == [(socket.trace_id, socket.span_id)]
        assert PROMPT.encode() not in b"".join(receiver.bodies)


def test_a_clients_traceparent_parents_the_turn_and_reaches_the_provider(
    fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    (openai, _), _ = fakes
    parent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
    with otlp_receiver() as receiver:
        with traced_gateway(
            "chat_completions", fakes, tmp_path, dice, endpoint=receiver.url
        ) as url:
            answer = httpx.post(
                f"{url}/v1/responses",
                json={"model": "primary", "input": "hi"},
                headers={"traceparent": parent, "tracestate": "vendor=1"},
            )
            assert answer.status_code == 200
        request = receiver.one("POST /v1/responses")
        assert (request.trace_id, request.parent_id) == (CLIENT_TRACE, CLIENT_SPAN)
        assert answer.headers["traceparent"] == f"00-{CLIENT_TRACE}-{request.span_id}-01"
        attempt = receiver.one("chat model-primary")
        assert attempt.trace_id == CLIENT_TRACE
        sent = openai.headers[-1]
        assert sent["traceparent"] == f"00-{CLIENT_TRACE}-{attempt.span_id}-01"
        assert sent["tracestate"] == "vendor=1"


def test_a_background_turn_links_to_the_request_that_started_it(
    fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver() as receiver:
        with traced_gateway(
            "chat_completions", fakes, tmp_path, dice, endpoint=receiver.url
        ) as url:
            answer = httpx.post(
                f"{url}/v1/responses",
                json={"model": "primary", "input": "hi", "background": True},
            )
            assert answer.status_code == 200
            response_id = answer.json()["id"]
            for _ in range(200):
                got = httpx.get(f"{url}/v1/responses/{response_id}").json()
                if got["status"] == "completed":
                    break
        request = receiver.one("POST /v1/responses")
        turn = turn_span(receiver, response_id)
        assert turn.parent_id == "" and turn.links == [(request.trace_id, request.span_id)]
        assert turn.attributes["gateway.background"] is True


def test_content_capture_puts_the_prompt_and_answer_in_capped_events(
    fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver() as receiver:
        with traced_gateway(
            "chat_completions",
            fakes,
            tmp_path,
            dice,
            endpoint=receiver.url,
            capture_content=True,
            max_content_chars=200,
            headers={"x-collector-token": "collector-token-1"},
        ) as url:
            answer = httpx.post(
                f"{url}/v1/responses",
                json={"model": "primary", "input": PROMPT + " " + "x" * 500},
                headers={"Authorization": f"Bearer {CLIENT_SECRET}"},
            )
            assert answer.status_code == 200
        attempt = receiver.one("chat model-primary")
        details = [fields for name, fields in attempt.events if name.startswith("gen_ai.client")]
        sent, answered = details
        assert PROMPT in sent["gen_ai.input.messages"]
        assert len(sent["gen_ai.input.messages"]) == 200
        assert "reply to" in answered["gen_ai.output.messages"]
        assert CLIENT_SECRET.encode() not in b"".join(receiver.bodies)
        assert UPSTREAM_KEY.encode() not in b"".join(receiver.bodies)
        assert receiver.headers[0]["x-collector-token"] == "collector-token-1"


@pytest.mark.parametrize("collector", ["down", "slow"])
def test_a_collector_that_is_down_or_slow_never_fails_a_turn(
    collector: str, fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver(slow=True) as slow, refusing_url() as down:
        endpoint = down if collector == "down" else slow.url
        with (
            traced_gateway(
                "chat_completions",
                fakes,
                tmp_path,
                dice,
                endpoint=endpoint,
                export_timeout_seconds=0.2,
                max_queue_size=8,
            ) as url,
            httpx.Client(base_url=url, timeout=30) as client,
        ):
            for number in range(12):
                answer = client.post(
                    "/v1/responses", json={"model": "primary", "input": f"turn {number}"}
                )
                assert answer.status_code == 200
                assert answer.json()["status"] == "completed"
        if collector == "slow":
            # It was reached, in batches no larger than the queue.
            assert slow.batch_sizes and max(slow.batch_sizes) <= 8


def test_log_lines_carry_the_trace_and_span_of_the_work_they_tell_of() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from gateway.observability.request_log import JSONFormatter, RequestIdFilter, TextFormatter
    from gateway.tracing import NO_TRACER, Tracer

    def record() -> logging.LogRecord:
        made = logging.LogRecord("gateway.test", logging.INFO, __file__, 1, "said", None, None)
        RequestIdFilter().filter(made)
        return made

    provider = TracerProvider()
    tracer = Tracer(provider.get_tracer("test"))
    with tracer.span("work") as span:
        context = span.get_span_context()
        line = json.loads(JSONFormatter().format(record()))
        text = TextFormatter().format(record())
    assert line["trace_id"] == f"{context.trace_id:032x}"
    assert line["span_id"] == f"{context.span_id:016x}"
    assert f"trace_id={context.trace_id:032x}" in text
    with NO_TRACER.span("work"):
        untraced = json.loads(JSONFormatter().format(record()))
    assert "trace_id" not in untraced and "span_id" not in untraced
    provider.shutdown()


@pytest.mark.parametrize("traced", [False, True])
def test_a_turn_stores_its_timeline_whether_or_not_traces_are_exported(
    traced: bool, fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with otlp_receiver() as receiver:
        (_, openai_url), _ = fakes
        urls = {"openai": openai_url, "anthropic": openai_url}
        otlp = {"endpoint": receiver.url} if traced else None
        raw = wire_config("chat_completions", urls, tmp_path / "s.db", dice, otlp)
        with serve(create_app(parse_config(raw, env={}))) as url:
            script_chained_turn("chat_completions", fakes)
            ids = http_turns(url, dice, stream=False, headers={}, traced=traced)
        assert bool(receiver.spans) is traced
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        (stored,) = conn.execute(
            "SELECT timeline FROM responses WHERE id = ?", (ids[1],)
        ).fetchone()
    steps = json.loads(stored)
    assert [(s["kind"], s.get("outcome") or s.get("status")) for s in steps] == [
        ("resolve", None),
        ("attempt", "http_503"),
        ("attempt", "http_502"),
        ("attempt", "answered"),
        ("tool", "completed"),
        ("attempt", "answered"),
        ("save", None),
    ]
    assert steps[0]["depth"] == 1 and steps[0]["source"] == "store"
    assert [s["name"] for s in steps[1:4]] == [
        "east/model-primary",
        "east/model-primary",
        "west/model-backup",
    ]
    assert steps[1]["key"] is None and steps[4]["name"] == "roll"
    assert all(a["start"] <= a["end"] for a in steps[:-1])
    assert steps[-1]["end"] is None  # the save that stored it
    assert steps[3]["start"] <= steps[3]["first_token"] <= steps[3]["end"]


def test_a_chain_read_again_is_a_cache_hit_on_the_resolve_span(
    fakes: Any, tmp_path: Path, dice: McpServer
) -> None:
    with (
        otlp_receiver() as receiver,
        traced_gateway("chat_completions", fakes, tmp_path, dice, endpoint=receiver.url) as url,
    ):
        first = httpx.post(f"{url}/v1/responses", json={"model": "primary", "input": "a"})
        branch = {"model": "primary", "input": "b", "previous_response_id": first.json()["id"]}
        for _ in range(2):  # two branches from one turn: the second finds the chain kept
            assert httpx.post(f"{url}/v1/responses", json=branch).status_code == 200
    sources = [span.attributes["gateway.history.source"] for span in receiver.by_name("resolve")]
    assert sources == ["store", "cache"]
    hits = [span.attributes["gateway.history.cache_hit"] for span in receiver.by_name("resolve")]
    assert hits == [False, True]
