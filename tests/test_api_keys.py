"""API keys and projects, on every backend: who may call, and what each project sees."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from gateway import create_app
from gateway.auth_settings import AuthSettings
from gateway.edge.auth import Authenticator
from session import MemoryStore, SessionStore, build_store, new_key

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve

pytestmark = [pytest.mark.api]

T = TypeVar("T")
STATIC_KEY = "sk-static-team-a-0123456789"
LIMITED_KEY = "sk-static-limited-0123456789"


@dataclass
class KeyedGateway:
    url: str
    fake: FakeUpstream
    on_store: Callable[[Callable[[SessionStore], Coroutine[Any, Any, Any]]], Any]

    def managed_key(self, project: str) -> tuple[str, str]:
        key, secret = new_key(project, name="test")
        self.on_store(lambda store: store.create_key(key))
        return key.id, secret

    def call(self, method: str, path: str, key: str | None, **options: Any) -> httpx.Response:
        headers = {} if key is None else {"authorization": f"Bearer {key}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **options)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def keyed(
    request: Any, fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> Iterator[KeyedGateway]:
    fake, upstream_url = fake_upstream
    session: dict[str, Any] = {"backend": request.param}
    if request.param == "sqlite":
        session["sqlite"] = {"path": str(tmp_path / "keys.db")}
    if request.param == "postgres":
        session["postgres"] = {"dsn": request.getfixturevalue("postgres_dsn")}
    auth = {
        "mode": "keys",
        "cache_seconds": 0,
        "keys": [
            {"key": STATIC_KEY, "project": "team-a", "name": "ci"},
            {"key": LIMITED_KEY, "project": "team-c", "requests_per_minute": 2},
        ],
    }
    config = gateway_config(upstream_url, tmp_path / "unused.db", session=session, auth=auth)
    app = create_app(config)

    def on_store(action: Callable[[SessionStore], Coroutine[Any, Any, T]]) -> T:
        if request.param == "memory":  # the gateway's own store: it awaits nothing
            store: MemoryStore = app.state.service.store
            return asyncio.run(action(store))

        async def run() -> T:
            store = build_store(config.session)
            try:
                return await action(store)
            finally:
                await store.close()

        return asyncio.run(run())

    with serve(app) as url:
        yield KeyedGateway(url, fake, on_store)


def error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def test_every_outcome_of_authentication(keyed: KeyedGateway) -> None:
    body = {"model": "echo", "input": "hi"}
    missing = keyed.call("POST", "/v1/responses", None, json=body)
    assert missing.status_code == 401 and error_code(missing) == "invalid_api_key"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization" in missing.json()["error"]["message"]
    not_bearer = httpx.post(
        f"{keyed.url}/v1/responses", json=body, headers={"authorization": STATIC_KEY}
    )
    assert not_bearer.status_code == 401
    unknown = keyed.call("POST", "/v1/responses", "sk-gw-not-a-key-at-all", json=body)
    assert unknown.status_code == 401 and error_code(unknown) == "invalid_api_key"
    assert "sk-gw-not" not in unknown.text
    assert keyed.call("POST", "/v1/responses", STATIC_KEY, json=body).status_code == 200
    key_id, secret = keyed.managed_key("team-b")
    assert keyed.call("POST", "/v1/responses", secret, json=body).status_code == 200
    assert keyed.call("GET", "/v1/models", secret).status_code == 200
    keyed.on_store(lambda store: store.revoke_key(key_id))
    revoked = keyed.call("POST", "/v1/responses", secret, json=body)
    assert revoked.status_code == 401 and revoked.json() == unknown.json()
    assert keyed.call("GET", "/healthz", None).status_code == 200


def test_a_project_sees_nothing_of_another(keyed: KeyedGateway) -> None:
    """Another project's record answers exactly as a record that does not exist."""
    _, other = keyed.managed_key("team-b")
    mine = keyed.call("POST", "/v1/responses", STATIC_KEY, json={"model": "echo", "input": "x"})
    theirs = keyed.call("POST", "/v1/conversations", other, json={"items": []}).json()["id"]
    item = keyed.call(
        "POST",
        f"/v1/conversations/{theirs}/items",
        other,
        json={"items": [{"type": "message", "role": "user", "content": "secret"}]},
    ).json()["data"][0]["id"]
    foreign = {"response": mine.json()["id"], "conversation": theirs, "item": item}
    absent = {
        "response": "resp_" + "0" * 48,
        "conversation": "conv_" + "0" * 48,
        "item": "msg_" + "0" * 48,
    }
    caller = {"response": other, "conversation": STATIC_KEY, "item": STATIC_KEY}

    def requests(ids: dict[str, str]) -> list[tuple[str, str, str, Any]]:
        r, c, i = ids["response"], ids["conversation"], ids["item"]
        create = {"model": "echo", "input": "go on"}
        return [
            ("GET", f"/v1/responses/{r}", "response", None),
            ("GET", f"/v1/responses/{r}/input_items", "response", None),
            ("DELETE", f"/v1/responses/{r}", "response", None),
            ("POST", "/v1/responses", "response", {**create, "previous_response_id": r}),
            (
                "POST",
                "/v1/responses",
                "response",
                {**create, "previous_response_id": r, "stream": True},
            ),
            ("POST", "/v1/responses", "conversation", {**create, "conversation": c}),
            ("GET", f"/v1/conversations/{c}", "conversation", None),
            ("POST", f"/v1/conversations/{c}", "conversation", {"metadata": {"a": "b"}}),
            ("GET", f"/v1/conversations/{c}/items", "conversation", None),
            ("POST", f"/v1/conversations/{c}/items", "conversation", {"items": []}),
            ("GET", f"/v1/conversations/{c}/items/{i}", "item", None),
            ("DELETE", f"/v1/conversations/{c}/items/{i}", "item", None),
            ("DELETE", f"/v1/conversations/{c}", "conversation", None),
        ]

    for denied, missing in zip(requests(foreign), requests(absent), strict=True):
        method, path, kind, body = denied
        key = caller[kind]
        refused = keyed.call(method, path, key, json=body)
        not_there = keyed.call(missing[0], missing[1], key, json=missing[3])
        assert refused.status_code == not_there.status_code, path
        assert refused.status_code in (400, 404), (path, refused.text)
        for name in ("response", "conversation", "item"):  # the ids named in the messages
            assert foreign[name] not in not_there.text
        masked = refused.content
        for name in ("response", "conversation", "item"):
            masked = masked.replace(foreign[name].encode(), absent[name].encode())
        assert masked == not_there.content, path
    # and the owners still have everything
    assert keyed.call("GET", f"/v1/responses/{foreign['response']}", STATIC_KEY).status_code == 200
    assert keyed.call("GET", f"/v1/conversations/{theirs}/items/{item}", other).status_code == 200


def test_the_clients_key_never_goes_upstream_nor_into_logs(
    keyed: KeyedGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"model": "chat-model", "input": "hello", "stream": False}
    response = keyed.call("POST", "/v1/responses", STATIC_KEY, json=body)
    assert response.status_code == 200
    sent = json.dumps([keyed.fake.headers, keyed.fake.requests])
    assert STATIC_KEY not in sent
    assert keyed.fake.headers[-1]["authorization"] == "Bearer sk-upstream-secret-0123456789"
    assert STATIC_KEY not in caplog.text


def test_a_keys_rate_limit_is_429_with_retry_after(keyed: KeyedGateway) -> None:
    body = {"model": "echo", "input": "x"}
    for _ in range(2):
        assert keyed.call("POST", "/v1/responses", LIMITED_KEY, json=body).status_code == 200
    limited = keyed.call("POST", "/v1/responses", LIMITED_KEY, json=body)
    assert limited.status_code == 429 and error_code(limited) == "rate_limit_exceeded"
    assert 1 <= int(limited.headers["retry-after"]) <= 30
    assert keyed.call("POST", "/v1/responses", STATIC_KEY, json=body).status_code == 200


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.anyio
@pytest.mark.unit
async def test_a_revocation_is_seen_once_the_cache_expires() -> None:
    store = MemoryStore()
    key, secret = new_key("p")
    await store.create_key(key)
    clock = Clock()
    authenticator = Authenticator(AuthSettings(mode="keys", cache_seconds=5), store, store, clock)
    header = f"Bearer {secret}"
    assert (await authenticator.authenticate(header)).project == "p"
    await store.revoke_key(key.id)
    clock.now += 4.9
    assert (await authenticator.authenticate(header)).key_id == key.id  # still cached
    clock.now += 0.2
    with pytest.raises(Exception, match="revoked"):
        await authenticator.authenticate(header)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
