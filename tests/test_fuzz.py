"""Property-based fuzzing of every endpoint: no 5xx, no traceback, and what was accepted
can be read back and continued.

    GATEWAY_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/test_fuzz.py   # a longer run
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.storage import throwaway_schema
from gateway import create_app

from .adapter_targets import postgres_base
from .conftest import ErrorLog, gateway_config
from .fake_anthropic import ANTHROPIC_KEY, FakeAnthropic
from .fake_upstream import FakeUpstream
from .fuzz_anthropic_bodies import anthropic_bodies
from .fuzz_bodies import (
    CALL_BODIES,
    CALL_NAMES,
    CONSOLE_PATHS,
    CONSOLE_QUERIES,
    HOSTILE,
    QUERIES,
    STORE_IDS,
    STORE_QUERIES,
    STORE_ROUTES,
    TEXT,
    TOOL_CHOICES,
    TOOL_KINDS,
    encode,
    items,
    response_bodies,
    store_bodies,
    tool_of_kind,
)
from .mcp_server import McpServer
from .servers import serve

pytestmark = [pytest.mark.api]

EXAMPLES = int(os.environ.get("GATEWAY_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # The default run draws the same examples every time; a longer one searches afresh.
    derandomize="GATEWAY_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
JSON = {"content-type": "application/json"}
SLASHED_ID = {"role": "user", "content": "a", "id": "a/b"}  # stored; no URL path can name it
TRACEBACK = "Traceback (most recent call" + " last)"


@pytest.fixture(scope="module")
def client(
    fake_upstream: tuple[FakeUpstream, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    db: Path = tmp_path_factory.mktemp("fuzz") / "s.db"
    app = create_app(gateway_config(fake_upstream[1], db))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def check(response: httpx.Response, errors: ErrorLog) -> Any:
    """No 5xx, no traceback, OpenAI's error shape; return the decoded body."""
    assert response.status_code < 500, response.text
    # Hypothesis draws strings from constants in this project's source, and the echo model
    # repeats what it is sent: the needle is built, so that no constant holds it whole.
    assert TRACEBACK not in response.text
    assert not errors.records, [r.getMessage() for r in errors.records]
    if (
        response.is_redirect
        or response.status_code == 204
        or response.headers.get("content-type", "").startswith("text/event-stream")
    ):
        return None
    body = response.json()
    if response.status_code >= 400:
        assert set(body["error"]) == {"message", "type", "param", "code"}
    return body


@FUZZ
@given(body=response_bodies())
def test_create_response(client: httpx.Client, errors: ErrorLog, body: dict[str, Any]) -> None:
    response = client.post("/v1/responses", content=encode(body), headers=JSON)
    created = check(response, errors)
    if response.status_code != 200 or created is None or not created.get("store", True):
        return
    response_id = created["id"]
    assert check(client.get(f"/v1/responses/{response_id}"), errors)["id"] == response_id
    check(client.get(f"/v1/responses/{response_id}/input_items"), errors)
    follow = {"model": "echo", "input": "next", "previous_response_id": response_id}
    continued = client.post("/v1/responses", json=follow)
    assert check(continued, errors)["status"] == "completed"


@pytest.fixture(scope="module")
def claude_client(
    fake_upstream: tuple[FakeUpstream, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """A gateway whose model ``claude`` goes to the strict fake Messages API."""
    with serve(FakeAnthropic().app) as anthropic_url:
        provider = {"wire_api": "anthropic", "base_url": anthropic_url, "api_key": ANTHROPIC_KEY}
        config = gateway_config(
            fake_upstream[1],
            tmp_path_factory.mktemp("fuzz-claude") / "s.db",
            providers={"claude": provider, "echo": {"wire_api": "echo"}},
            models={"claude": {"provider": "claude", "upstream_model": "claude-sonnet-5-5"}},
        )
        with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield http


def not_relayed(response: httpx.Response, errors: ErrorLog) -> Any:
    """``check``, and no refusal of the upstream's relayed: the gateway made the request
    valid for the Messages API, or refused it itself naming the parameter."""
    body = check(response, errors)
    if response.status_code >= 400:
        assert body["error"]["code"] != "upstream_rejected", body
        assert body["error"]["type"] == "invalid_request_error" and body["error"]["param"]
    return body


@FUZZ
@given(body=anthropic_bodies())
def test_the_anthropic_wire_sends_only_what_the_messages_api_takes(
    claude_client: httpx.Client, errors: ErrorLog, body: dict[str, Any]
) -> None:
    response = claude_client.post("/v1/responses", content=encode(body), headers=JSON)
    created = not_relayed(response, errors)
    if response.status_code != 200 or created is None:
        return
    follow = {"model": "claude", "input": "next", "previous_response_id": created["id"]}
    assert not_relayed(claude_client.post("/v1/responses", json=follow), errors)


@pytest.fixture(scope="module")
def mcp_client(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path_factory: pytest.TempPathFactory,
    dice: McpServer,
) -> Iterator[httpx.Client]:
    """A gateway allowed to reach the test MCP server (``dice``)."""
    db: Path = tmp_path_factory.mktemp("fuzz-mcp") / "s.db"
    mcp = {"allowed_servers": [dice.url], "connect_timeout_seconds": 10}
    app = create_app(gateway_config(fake_upstream[1], db, mcp=mcp))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


@FUZZ
@example(
    tools=["mcp"],
    choice={"type": "mcp", "server_label": "zz", "name": "add"},
    stream=False,
    model="chat-model",
)
@example(
    tools=["mcp"], choice={"type": "mcp", "server_label": "zz"}, stream=True, model="chat-model"
)
@example(
    tools=["mcp"],
    choice={"type": "mcp", "server_label": "dice", "name": "add"},
    stream=True,
    model="chat-model",
)
@given(
    tools=st.lists(st.sampled_from(TOOL_KINDS), max_size=4, unique=True),
    choice=TOOL_CHOICES,
    stream=st.booleans(),
    model=st.sampled_from(["chat-model", "resp-model", "echo"]),
)
def test_tool_choice_over_every_tool_kind(
    mcp_client: httpx.Client,
    errors: ErrorLog,
    dice: McpServer,
    tools: list[str],
    choice: Any,
    stream: bool,
    model: str,
) -> None:
    """Whatever ``tool_choice`` picks among whatever tools: never a 5xx, never an error
    logged (a streamed turn that fails says why, as a failed response)."""
    body = {
        "model": model,
        "input": "hi",
        "tools": [tool_of_kind(kind, dice.url) for kind in tools],
        "tool_choice": choice,
        "stream": stream,
    }
    check(mcp_client.post("/v1/responses", content=encode(body), headers=JSON), errors)


@FUZZ
@example(items_=[{"type": "reasoning", "id": "\x1f"}], metadata=None, update={}, appended=[])
@example(items_=[SLASHED_ID], metadata=None, update=0, appended=[])
@given(
    items_=st.lists(st.one_of(items(), st.just({"role": "user", "content": "hi"})), max_size=3),
    metadata=st.one_of(st.none(), HOSTILE),
    update=HOSTILE,
    appended=st.one_of(st.lists(items(), max_size=3), HOSTILE),
)
def test_conversations(
    client: httpx.Client,
    errors: ErrorLog,
    items_: list[Any],
    metadata: Any,
    update: Any,
    appended: Any,
) -> None:
    body: dict[str, Any] = {"items": items_}
    if metadata is not None:
        body["metadata"] = metadata
    created = client.post("/v1/conversations", content=encode(body), headers=JSON)
    conversation = check(created, errors)
    if created.status_code != 200:
        return
    path = f"/v1/conversations/{conversation['id']}"
    check(client.post(path, content=encode({"metadata": update}), headers=JSON), errors)
    check(client.post(f"{path}/items", content=encode({"items": appended}), headers=JSON), errors)
    assert client.get(path).status_code == 200
    listed = check(client.get(f"{path}/items", params={"limit": 100}), errors)
    for item in listed["data"]:
        answer = client.get(f"{path}/items/{quote(item['id'], safe='')}")
        if "/" in item["id"]:  # no path segment carries it, even percent-encoded
            assert check(answer, errors) and answer.status_code == 404
        else:
            assert check(answer, errors)["id"] == item["id"]
    turn = {"model": "echo", "input": "go on", "conversation": conversation["id"]}
    assert check(client.post("/v1/responses", json=turn), errors)["status"] == "completed"
    # A chat upstream may refuse a stored item it cannot express, but only with a 400
    # naming it (the client can delete that item); never with a 5xx.
    check(client.post("/v1/responses", json={**turn, "model": "chat-model"}), errors)


@FUZZ
@given(query=QUERIES, target=TEXT)
def test_lists_and_lookups(
    client: httpx.Client, errors: ErrorLog, query: dict[str, str], target: str
) -> None:
    first = check(client.post("/v1/responses", json={"model": "echo", "input": "a"}), errors)
    conversation = check(client.post("/v1/conversations", json={"items": []}), errors)
    for path in (
        f"/v1/responses/{first['id']}/input_items",
        f"/v1/conversations/{conversation['id']}/items",
    ):
        check(client.get(path, params=query), errors)
    safe = quote(target.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), safe="")
    for method in ("GET", "DELETE"):
        for path in (f"/v1/responses/{safe}", f"/v1/conversations/{safe}"):
            if safe:
                check(client.request(method, path), errors)


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres"])
def store_client(
    request: pytest.FixtureRequest,
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    """A gateway on each backend, holding conversation ``c1`` with message ``m1``."""
    folder = tmp_path_factory.mktemp("fuzz-store")
    session: dict[str, Any] = {"backend": request.param, "sqlite": {"path": str(folder / "s.db")}}
    with ExitStack() as stack:
        if request.param == "postgres":
            session["postgres"] = {"dsn": stack.enter_context(throwaway_schema(postgres_base()))}
        config = gateway_config(fake_upstream[1], folder / "s.db", session=session)
        url = stack.enter_context(serve(create_app(config)))
        http = stack.enter_context(httpx.Client(base_url=url, timeout=30))
        seed = {"messages": [{"payload": "a", "role": "user", "messageId": "m1"}]}
        assert http.post("/v1/store/conversations/c1/messages", json=seed).status_code == 201
        yield http


def sendable(value: str) -> str:
    """``value`` as an HTTP client can send it (a lone surrogate replaced)."""
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def store_segment(value: str) -> str:
    return quote(sendable(value), safe="")


@FUZZ
@example(route=("PATCH", "/v1/store/messages/{id}"), ident="m1", body={"message_id": "x"}, query={})
@example(route=("PATCH", "/v1/store/messages/{id}"), ident="m1", body={"self": 1}, query={})
@example(route=("PATCH", "/v1/store/messages/{id}"), ident="m1", body={"role": {}}, query={})
@example(route=("GET", "/v1/store/conversations/{id}"), ident="a\x00", body={}, query={})
@example(route=("GET", "/v1/store/conversations"), ident="", body={}, query={"cursor": "e30="})
@given(
    route=st.sampled_from(STORE_ROUTES), ident=STORE_IDS, body=store_bodies(), query=STORE_QUERIES
)
def test_store_routes(
    store_client: httpx.Client,
    errors: ErrorLog,
    route: tuple[str, str],
    ident: str,
    body: Any,
    query: dict[str, str],
) -> None:
    method, template = route
    path = template.format(id=store_segment(ident))
    content = None if method == "GET" else encode(body)
    params = {name: sendable(value) for name, value in query.items()}
    check(store_client.request(method, path, params=params, content=content, headers=JSON), errors)
    check(store_client.get("/v1/store/messages/m1"), errors)


@FUZZ
@example(name="claude.list_sessions", args={"project_key": {"a": 1}})
@example(name="claude.put_summary", args={"key": {"project_key": "p", "session_id": "s"},
         "value": {}, "version": 2**63, "through": 0})  # fmt: skip
@given(name=st.sampled_from(CALL_NAMES), args=CALL_BODIES)
def test_store_calls(
    store_client: httpx.Client, errors: ErrorLog, name: str, args: dict[str, Any]
) -> None:
    path = f"/v1/store/calls/{store_segment(name)}"
    check(store_client.post(path, content=encode(args), headers=JSON), errors)


@FUZZ
@given(query=QUERIES, body=TEXT)
def test_gateway_routes(
    client: httpx.Client, errors: ErrorLog, query: dict[str, str], body: str
) -> None:
    routes = check(client.get("/v1/gateway/routes", params=query), errors)
    assert set(routes) == {"models", "providers", "cooldowns"}
    reset = client.post(
        "/v1/gateway/routes/reset", params=query, content=body.encode("utf-8", "replace")
    )
    answer = check(reset, errors)  # a body that is not JSON is a 415, never a 5xx
    assert answer == {"cooldowns": {}} if reset.status_code == 200 else "error" in answer
    emptied = client.post("/v1/gateway/routes/reset", params=query)
    assert check(emptied, errors) == {"cooldowns": {}}
    assert client.put("/v1/gateway/routes").status_code == 405


@FUZZ
@example(path="usage", ident="x", query={"since": "NaN"}, body={})
@example(path="usage", ident="x", query={"until": "nan"}, body={})
@example(path="usage", ident="x", query={"since": "-inf", "until": "inf"}, body={})
@example(path="responses", ident="x", query={"since": "1" + "0" * 400}, body={})
@given(path=st.sampled_from(CONSOLE_PATHS), ident=TEXT, query=CONSOLE_QUERIES, body=HOSTILE)
def test_console_endpoints(
    client: httpx.Client,
    errors: ErrorLog,
    path: str,
    ident: str,
    query: dict[str, str],
    body: Any,
) -> None:
    named = path.replace("{id}", store_segment(ident) or "x")
    answer = check(client.get(f"/v1/gateway/console/{named}", params=query), errors)
    assert answer is not None
    login = client.post("/v1/gateway/console/login", content=encode(body), headers=JSON)
    check(login, errors)
