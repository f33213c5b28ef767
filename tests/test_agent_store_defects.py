"""The agent Store over HTTP refuses what a client gets wrong with a 400 naming it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .conftest import Gateway

pytestmark = [pytest.mark.api]

ROUTES = [
    ("POST", "/v1/store/conversations", {"conversationId": "c2"}),
    ("PATCH", "/v1/store/conversations/c1", {"metadata": {}}),
    ("DELETE", "/v1/store/conversations/c9", {}),
    ("POST", "/v1/store/conversations/c1/messages", {"messages": [{"payload": 1}]}),
    ("POST", "/v1/store/conversations/c1/pop", {}),
    ("POST", "/v1/store/conversations/c1/clear", {}),
    ("PUT", "/v1/store/conversations/c1/state/k", {"value": 1}),
    ("DELETE", "/v1/store/conversations/c1/state/k", {}),
    ("PATCH", "/v1/store/messages/m1", {"payload": 2}),
    ("DELETE", "/v1/store/messages/m9", {}),
    ("POST", "/v1/store/claude-bindings", {"conversationId": "c1"}),
    ("POST", "/v1/store/calls/claude.list_sessions", {"project_key": "p"}),
]


@pytest.fixture
def http(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        created = client.post(
            "/v1/store/conversations/c1/messages",
            json={"messages": [{"payload": "a", "role": "user", "messageId": "m1"}]},
        )
        assert created.status_code == 201, created.text
        yield client


def refusal(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"]) == ("invalid_request_error", "BadRequest")
    return error


@pytest.mark.parametrize("field", ["message_id", "self", "fields", "bogus"])
def test_a_message_update_with_a_field_it_does_not_take_is_a_400(
    http: httpx.Client, field: str
) -> None:
    error = refusal(http.patch("/v1/store/messages/m1", json={field: "x"}))
    assert error["param"] == field
    assert http.get("/v1/store/messages/m1").json()["payload"] == "a"


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_route_names_the_field_it_does_not_take(
    http: httpx.Client, method: str, path: str, body: dict[str, Any]
) -> None:
    answer = http.request(method, path, json={**body, "self": 1})
    assert refusal(answer)["param"] == "self"
    assert http.request(method, path, json=body).status_code < 300


def test_a_message_field_of_the_wrong_type_is_named(http: httpx.Client) -> None:
    for field, value in (("role", {"a": 1}), ("type", ["x"]), ("role", True), ("type", 3)):
        error = refusal(http.patch("/v1/store/messages/m1", json={field: value}))
        assert error["param"] == field
    unknown = http.post(
        "/v1/store/conversations/c1/messages", json={"messages": [{"payload": 1, "seq": 2}]}
    )
    assert refusal(unknown)["param"] == "messages[0].seq"
    assert http.get("/v1/store/messages/m1").json()["role"] == "user"


def test_forged_cursors_and_nul_ids_are_400s(http: httpx.Client) -> None:
    for position in ({"t": {"a": 1}, "i": "c1"}, {"t": 1, "i": 2**70}, {"t": "1e999"}):
        cursor = base64.urlsafe_b64encode(json.dumps(position).encode()).decode()
        answer = http.get("/v1/store/conversations", params={"cursor": cursor})
        assert refusal(answer)["param"] == "cursor"
    answer = http.get("/v1/store/conversations/c1/messages", params={"cursor": "a.b"})
    assert refusal(answer)["param"] == "cursor"
    assert refusal(http.get("/v1/store/conversations/a%00b"))["param"] == "conversationId"
    assert refusal(http.delete("/v1/store/messages/m%00"))["param"] == "messageId"
    answer = http.post("/v1/store/calls/claude.list_sessions", json={"project_key": {"a": 1}})
    assert refusal(answer)["param"] == "project_key"
