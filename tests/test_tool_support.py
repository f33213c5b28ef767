"""Every tool type of the ``openai`` SDK's ``Tool`` union, sent to a model on each wire: each
is served (passed natively, run by the gateway, or offered as a function the client runs)
or refused with OpenAI's 400 naming it, before anything is stored or sent; never dropped."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.types.responses import tool_param

from gateway import parse_config

from .fake_anthropic import FakeAnthropic
from .fake_upstream import FakeUpstream
from .mcp_server import McpServer
from .servers import serve
from .tool_wires import MODELS, Wires, wires_gateway

pytestmark = [pytest.mark.api]

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
COMPANION = {"type": "function", "name": "get_weather", "parameters": WEATHER}
# One declaration of each tool type, as a client sends it.
EXAMPLES: dict[str, dict[str, Any]] = {
    "function": {"type": "function", "name": "lookup", "parameters": WEATHER},
    "custom": {"type": "custom", "name": "freeform"},
    "namespace": {
        "type": "namespace",
        "name": "crm",
        "description": "The CRM.",
        "tools": [{"type": "function", "name": "find", "parameters": WEATHER}],
    },
    "file_search": {"type": "file_search", "vector_store_ids": ["vs_1"]},
    "computer": {"type": "computer"},
    "computer_use_preview": {
        "type": "computer_use_preview",
        "display_width": 1024,
        "display_height": 768,
        "environment": "browser",
    },
    "web_search": {"type": "web_search"},
    "web_search_2025_08_26": {"type": "web_search_2025_08_26"},
    "mcp": {"type": "mcp", "server_label": "dice", "require_approval": "never"},
    "code_interpreter": {"type": "code_interpreter", "container": {"type": "auto"}},
    "programmatic_tool_calling": {"type": "programmatic_tool_calling"},
    "image_generation": {"type": "image_generation"},
    "local_shell": {"type": "local_shell"},
    "shell": {"type": "shell", "environment": {"type": "local"}},
    "tool_search": {"type": "tool_search", "execution": "client"},
    "web_search_preview": {"type": "web_search_preview"},
    "web_search_preview_2025_03_11": {"type": "web_search_preview_2025_03_11"},
    "apply_patch": {"type": "apply_patch"},
}
# The function each client-run tool is offered as on the chat and Messages wires.
FUNCTIONS = {
    "function": "lookup",
    "custom": "freeform",
    "namespace": "crm__find",
    "mcp": "mcp__dice__roll",
    "shell": "shell",
    "local_shell": "local_shell",
    "apply_patch": "apply_patch",
    "computer": "computer",
    "computer_use_preview": "computer",
    "tool_search": "tool_search",
}
HOSTED = {"upstream"}  # a Responses upstream runs every type itself by default


def sdk_tool_types() -> set[str]:
    """Every ``type`` value of the SDK's ``ToolParam`` union."""
    found: set[str] = set()
    for member in typing.get_args(tool_param.ToolParam):
        annotation = typing.get_type_hints(member, include_extras=True)["type"]
        while typing.get_origin(annotation) is not typing.Literal:
            annotation = typing.get_args(annotation)[0]
        found.update(typing.get_args(annotation))
    return found


def expected(kind: str, wire: str) -> str:
    """What each wire answers: ``native`` (passed on), ``function`` (offered), ``400``."""
    if wire == "responses":
        return "native"
    return "function" if kind in FUNCTIONS else "400"


@pytest.fixture
def wires(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    tmp_path: Path,
    dice: McpServer,
) -> Iterator[Wires]:
    with wires_gateway(fake_upstream, anthropic_upstream, tmp_path, dice) as made:
        yield made


def test_the_table_covers_every_tool_type_of_the_sdk() -> None:
    assert sdk_tool_types() == set(EXAMPLES)


def offered(wires: Wires, wire: str) -> list[str]:
    """The names of the tools the fake model of ``wire`` was last offered."""
    if wire == "anthropic":
        return [tool["name"] for tool in wires.claude.last.get("tools", [])]
    return [tool["function"]["name"] for tool in wires.chat.last.get("tools", [])]


@pytest.mark.parametrize("wire", list(MODELS))
@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_each_tool_type_is_served_or_refused_on_each_wire(
    wires: Wires, dice: McpServer, kind: str, wire: str
) -> None:
    tool = dict(EXAMPLES[kind])
    if kind == "mcp":
        tool["server_url"] = dice.url
    body = {"model": MODELS[wire], "input": "hello", "tools": [COMPANION, tool]}
    before = wires.gateway.stored_rows()
    answer = httpx.post(f"{wires.gateway.url}/v1/responses", json=body, timeout=30)
    outcome = expected(kind, wire)
    if outcome == "400":
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == {
            "message": f"Tool '{kind}' is not supported with {MODELS[wire]}.",
            "type": "invalid_request_error",
            "param": "tools[1].type",
            "code": None,
        }
        assert wires.gateway.stored_rows() == before  # nothing stored
        assert wires.chat.requests == [] and wires.claude.requests == []  # nothing sent
        return
    assert answer.status_code == 200, answer.text
    assert answer.json()["tools"][1]["type"] == kind  # echoed as sent
    if outcome == "native":
        sent = wires.chat.last["tools"][1]
        assert sent["type"] == kind
    elif wire != "echo":
        assert FUNCTIONS[kind] in offered(wires, wire)


def test_a_shell_in_a_hosted_container_is_refused_where_no_one_runs_it(wires: Wires) -> None:
    shell = {"type": "shell", "environment": {"type": "container_auto"}}
    body = {"model": "chat-model", "input": "hi", "tools": [shell]}
    answer = httpx.post(f"{wires.gateway.url}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "tools[0].environment.type"
    assert error["message"].startswith("Tool 'shell' is not supported with chat-model")


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_provider_runs_only_the_native_tools_it_is_given(
    fake_upstream: tuple[FakeUpstream, str],
    anthropic_upstream: tuple[FakeAnthropic, str],
    tmp_path: Path,
    stream: bool,
) -> None:
    native = {"fake-responses": {"native_tools": ["web_search", "function"]}}
    with wires_gateway(fake_upstream, anthropic_upstream, tmp_path, providers=native) as wires:
        url = f"{wires.gateway.url}/v1/responses"
        tools = [EXAMPLES["web_search"], EXAMPLES["function"]]
        body = {"model": "resp-model", "input": "hi", "tools": tools, "stream": stream}
        assert httpx.post(url, json=body, timeout=30).status_code == 200
        assert [t["type"] for t in wires.chat.last["tools"]] == ["web_search", "function"]
        body["tools"] = [*tools, EXAMPLES["code_interpreter"]]
        refused = httpx.post(url, json=body, timeout=30)
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "tools[2].type"


def test_a_fallback_that_cannot_serve_a_tool_refuses_it_before_the_first_try(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    from .conftest import gateway_config

    fake, url = fake_upstream
    models = {
        "resp-model": {
            "provider": "fake-responses",
            "upstream_model": "upstream-resp",
            "fallbacks": ["chat-model"],
        },
        "chat-model": {"provider": "fake-chat", "upstream_model": "upstream-chat"},
    }
    config = gateway_config(url, tmp_path / "s.db", models=models)
    from gateway import create_app

    with serve(create_app(config)) as gateway_url:
        body = {"model": "resp-model", "input": "hi", "tools": [EXAMPLES["web_search"]]}
        answer = httpx.post(f"{gateway_url}/v1/responses", json=body, timeout=30)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert message == "Tool 'web_search' is not supported with resp-model."
    assert fake.requests == []


@pytest.mark.parametrize(
    ("wire", "tools", "problem"),
    [
        ("chat_completions", ["web_search"], "only a provider with wire_api 'responses'"),
        ("responses", ["web_serach"], "unknown tool type.*'web_serach'"),
    ],
)
def test_native_tools_are_checked_at_start_up(wire: str, tools: list[str], problem: str) -> None:
    provider = {"wire_api": wire, "base_url": "http://x/v1", "native_tools": tools}
    with pytest.raises(Exception, match=problem):
        parse_config({"providers": {"p": provider}, "default_provider": "p"}, env={})
