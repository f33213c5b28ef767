"""Requests a page of another site makes a browser send: refused when they change state,
whatever their body, with ``auth.mode: none`` and, riding the console's cookie, with keys."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from gateway import create_app

from .conftest import gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve
from .test_background import wait_for_upstream

pytestmark = [pytest.mark.api]

CONVERSATION = "conv-victim"
ADMIN_KEY = "sk-admin-cross-site-0123456789"
PROJECT_KEY = "sk-project-cross-site-0123456789"
ERROR = {"error": {"message": "upstream trouble", "type": "server_error"}}

# What a page of another site makes a browser send, as headers: a page of any other site;
# one of the same host on another port (the same site, another origin); a sandboxed frame.
FOREIGN = [
    {"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
    {"origin": "https://evil.example"},
    {"sec-fetch-site": "cross-site"},
    {"origin": "http://127.0.0.1:1", "sec-fetch-site": "same-site"},
    {"sec-fetch-site": "same-site"},
    {"origin": "null", "sec-fetch-site": "cross-site"},
]


@dataclass
class Site:
    url: str
    fake: FakeUpstream
    background_id: str

    def messages(self) -> int:
        listed = httpx.get(f"{self.url}/v1/store/conversations/{CONVERSATION}/messages")
        assert listed.status_code == 200, listed.text
        return len(listed.json()["items"])

    def cooldowns(self) -> dict[str, object]:
        cooling: dict[str, object] = httpx.get(f"{self.url}/v1/gateway/routes").json()["cooldowns"]
        return cooling

    def status(self) -> str:
        found: str = httpx.get(f"{self.url}/v1/responses/{self.background_id}").json()["status"]
        return found

    def targets(self) -> list[str]:
        """The four state changes a page of another site could make: clear, pop, reset the
        cooldowns, cancel a running turn."""
        store = f"/v1/store/conversations/{CONVERSATION}"
        cancel = f"/v1/responses/{self.background_id}/cancel"
        return [f"{store}/clear", f"{store}/pop", "/v1/gateway/routes/reset", cancel]


def seed_conversation(url: str, headers: dict[str, str] | None = None) -> None:
    made = httpx.post(
        f"{url}/v1/store/conversations", json={"conversationId": CONVERSATION}, headers=headers
    )
    assert made.status_code == 201, made.text
    messages = [{"role": "user", "payload": {"n": n}} for n in range(3)]
    added = httpx.post(
        f"{url}/v1/store/conversations/{CONVERSATION}/messages",
        json={"messages": messages},
        headers=headers,
    )
    assert added.status_code == 201, added.text


@pytest.fixture
def site(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[Site]:
    """A gateway (``auth.mode: none``) holding a 3-message conversation, a cooling
    deployment and a background turn waiting on its upstream."""
    fake, upstream = fake_upstream
    routing = {"cooldown": {"allowed_fails": 1, "seconds": 600, "max_seconds": 600}}
    chat = {"provider": "fake-chat", "upstream_model": "upstream-chat"}
    spread = {"deployments": [chat, {"provider": "fake-responses", "upstream_model": "r"}]}
    models = {"chat-model": chat, "spread": spread}
    config = gateway_config(upstream, tmp_path / "s.db", routing=routing, models=models)
    gate = threading.Event()
    with serve(create_app(config)) as url:
        seed_conversation(url)
        fake.script(Reply(status=500, error_body=ERROR))
        httpx.post(f"{url}/v1/responses", json={"model": "spread", "input": "cools one down"})
        fake.script(Reply(text="slow", gate=gate))
        body = {"model": "chat-model", "input": "slow", "background": True}
        queued = httpx.post(f"{url}/v1/responses", json=body).json()
        wait_for_upstream(fake, 2)
        try:
            found = Site(url, fake, queued["id"])
            assert found.messages() == 3 and found.cooldowns() and found.status() == "in_progress"
            yield found
        finally:
            gate.set()


def assert_refused(answer: httpx.Response) -> None:
    assert answer.status_code == 403, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_origin"
    assert "server.allowed_origins" in error["message"] and error["param"] is None


@pytest.mark.parametrize("headers", FOREIGN, ids=lambda headers: "+".join(headers.values()))
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/json"])
def test_state_changes_from_another_site_are_refused(
    site: Site, headers: dict[str, str], content_type: str | None
) -> None:
    sent = dict(headers)
    if content_type is not None:
        sent["content-type"] = content_type
    for path in site.targets():
        assert_refused(httpx.post(f"{site.url}{path}", headers=sent))
    conversation = f"{site.url}/v1/store/conversations/{CONVERSATION}"
    assert_refused(httpx.delete(conversation, headers=sent))
    assert_refused(httpx.put(f"{conversation}/state/k", json={"value": 1}, headers=headers))
    assert_refused(httpx.patch(conversation, json={"metadata": {}}, headers=headers))
    spend = {"model": "echo", "input": "spend"}
    assert_refused(httpx.post(f"{site.url}/v1/responses", json=spend, headers=headers))
    assert site.messages() == 3
    assert site.cooldowns() != {}
    assert site.status() == "in_progress"
    assert httpx.get(conversation, headers=headers).status_code == 200  # reads are not refused


@pytest.mark.parametrize(
    "headers",
    [
        {},  # an SDK, curl
        {"origin": "own", "sec-fetch-site": "same-origin"},  # the gateway's own page
        {"origin": "own"},
        {"sec-fetch-site": "same-origin"},  # behind a proxy that changes Host
        {"origin": "https://proxy.example", "sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},  # typed in by the user
    ],
    ids=["no-origin", "own+same-origin", "own", "same-origin", "proxied", "none"],
)
def test_the_gateways_own_pages_and_other_clients_still_change_state(
    site: Site, headers: dict[str, str]
) -> None:
    sent = {name: site.url if value == "own" else value for name, value in headers.items()}
    clear, pop, reset, cancel = (f"{site.url}{path}" for path in site.targets())
    popped = httpx.post(pop, headers=sent)
    assert popped.status_code == 200 and popped.json()["message"]["payload"] == {"n": 2}
    assert site.messages() == 2
    assert httpx.post(clear, headers=sent).status_code == 204
    assert site.messages() == 0
    assert httpx.post(reset, headers=sent).json() == {"cooldowns": {}}
    assert site.cooldowns() == {}
    cancelled = httpx.post(cancel, headers=sent)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_an_origin_in_the_allow_list_may_change_state(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    server = {"allowed_origins": ["https://App.example/"]}
    config = gateway_config(fake_upstream[1], tmp_path / "s.db", server=server)
    with serve(create_app(config)) as url:
        seed_conversation(url)
        clear = f"{url}/v1/store/conversations/{CONVERSATION}/clear"
        app = {"origin": "https://app.example", "sec-fetch-site": "cross-site"}
        assert_refused(httpx.post(clear, headers={"origin": "https://evil.example"}))
        assert httpx.post(clear, headers=app).status_code == 204


# -- with API keys -----------------------------------------------------------------------


@pytest.fixture
def keyed(fake_upstream: tuple[FakeUpstream, str], tmp_path: Path) -> Iterator[str]:
    auth = {
        "mode": "keys",
        "cache_seconds": 0,
        "admin_key": ADMIN_KEY,
        "keys": [{"key": PROJECT_KEY, "project": "default", "name": "ci"}],
    }
    config = gateway_config(fake_upstream[1], tmp_path / "s.db", auth=auth)
    with serve(create_app(config)) as url:
        seed_conversation(url, {"authorization": f"Bearer {PROJECT_KEY}"})
        yield url


def test_with_keys_a_bearer_key_is_served_from_anywhere(keyed: str) -> None:
    bearer = {"authorization": f"Bearer {PROJECT_KEY}"}
    messages = f"{keyed}/v1/store/conversations/{CONVERSATION}/messages"
    pop = f"{keyed}/v1/store/conversations/{CONVERSATION}/pop"
    for foreign in FOREIGN:
        assert_refused(httpx.post(pop, headers=foreign))  # no key: refused before the 401
    assert len(httpx.get(messages, headers=bearer).json()["items"]) == 3
    popped = httpx.post(pop, headers={**bearer, **FOREIGN[0]})
    assert popped.status_code == 200 and popped.json()["message"]["payload"] == {"n": 2}
    wrong = httpx.post(pop, headers={"authorization": "Bearer sk-wrong", **FOREIGN[0]})
    assert wrong.status_code == 401
    assert len(httpx.get(messages, headers=bearer).json()["items"]) == 2


def test_with_keys_the_console_cookie_changes_nothing_from_another_site(keyed: str) -> None:
    with httpx.Client(base_url=keyed) as browser:
        login = browser.post("/v1/gateway/console/login", json={"key": ADMIN_KEY})
        assert login.status_code == 200 and "gateway_console" in browser.cookies
        same_site = {"origin": "http://127.0.0.1:1", "sec-fetch-site": "same-site"}
        assert_refused(browser.post("/v1/gateway/console/logout", headers=same_site))
        assert_refused(
            browser.post("/v1/gateway/console/login", json={"key": PROJECT_KEY}, headers=same_site)
        )
        assert browser.get("/v1/gateway/console/whoami").json()["admin"] is True
        own = {"origin": keyed, "sec-fetch-site": "same-origin"}
        assert browser.post("/v1/gateway/console/logout", headers=own).status_code == 200
