"""The console's JSON endpoints over HTTP: what each answers, who may see what, the login
cookie, and the headers every console answer carries."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from gateway.edge.console_access import COOKIE
from session import SQLiteStore, hash_secret, new_key

from .conftest import gateway_config
from .console_data import INJECTION, START, Seeded, seed
from .servers import serve

pytestmark = [pytest.mark.api]

ADMIN_KEY = "sk-admin-console-0123456789"
DEFAULT_KEY = "sk-project-default-0123456789"
TEAM_B_KEY = "sk-project-team-b-0123456789"
API = "/v1/gateway/console"


@dataclass
class Console:
    url: str
    seeded: Seeded
    managed_secret: str
    managed_id: str

    def get(self, path: str, auth: str | None = ADMIN_KEY, **params: Any) -> httpx.Response:
        headers = {} if auth is None else {"authorization": f"Bearer {auth}"}
        return httpx.get(f"{self.url}{path}", headers=headers, params=params, timeout=30)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    root = tmp_path_factory.mktemp("console-api")
    key, secret = new_key("default", name="console-test", budget_tokens=1_000_000)

    async def fill() -> Seeded:
        store = SQLiteStore(root / "s.db")
        try:
            await store.create_key(key)
            return await seed(store, deep=120)
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as thread:
        seeded = thread.submit(asyncio.run, fill()).result()
    auth = {
        "mode": "keys",
        "cache_seconds": 0,
        "admin_key": ADMIN_KEY,
        "keys": [
            {"key": DEFAULT_KEY, "project": "default", "name": "ci"},
            {"key": TEAM_B_KEY, "project": "team-b", "name": "b"},
        ],
    }
    config = gateway_config("http://127.0.0.1:9", root / "s.db", auth=auth)
    with serve(create_app(config)) as url:
        yield Console(url, seeded, secret, key.id)


def test_the_page_and_every_answer_carry_the_content_security_policy(console: Console) -> None:
    page = console.get("/console", auth=None)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script" in page.text and "<script>" not in page.text  # scripts by src only
    for path in ("/console", "/console/static/console.js", f"{API}/whoami", f"{API}/nothing"):
        for key in (None, ADMIN_KEY):
            answer = console.get(path, auth=key)
            policy = answer.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "default-src 'self'" in policy
            assert "frame-ancestors 'none'" in policy and "unsafe" not in policy
            assert answer.headers["x-content-type-options"] == "nosniff"
    assert console.get("/console/static/../config.py").status_code == 404
    assert console.get("/console/static/uPlot.iife.min.js").status_code == 200


def test_a_key_is_needed_and_the_cookie_holds_a_session_not_the_key(console: Console) -> None:
    missing = console.get(f"{API}/whoami", auth=None)
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "invalid_api_key"
    assert console.get(f"{API}/whoami", auth="sk-wrong-key-0123456789").status_code == 401
    with httpx.Client(base_url=console.url) as browser:
        refused = browser.post(f"{API}/login", json={"key": "sk-wrong-key-0123456789"})
        assert refused.status_code == 401 and "set-cookie" not in refused.headers
        logged = browser.post(f"{API}/login", json={"key": DEFAULT_KEY})
        assert logged.status_code == 200
        assert logged.json() == {
            "auth": "keys",
            "admin": False,
            "project": "default",
            "key_id": "static:ci",
        }
        set_cookie = logged.headers["set-cookie"]
        cookie = set_cookie.lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert "secure" not in cookie  # plain http on loopback
        assert "max-age=" in cookie  # the session expires
        held = browser.cookies[COOKIE]
        assert DEFAULT_KEY not in set_cookie and hash_secret(DEFAULT_KEY) not in set_cookie
        assert DEFAULT_KEY not in held and DEFAULT_KEY not in logged.text
        assert browser.get(f"{API}/whoami").json()["project"] == "default"
        assert browser.get(f"{API}/responses", params={"limit": 1}).status_code == 200
        # The cookie serves reads only: an API call that changes state ignores it.
        created = browser.post("/v1/responses", json={"model": "echo-1", "input": "hi"})
        assert created.status_code == 401
        again = browser.post(f"{API}/login", json={"key": DEFAULT_KEY})
        assert browser.cookies[COOKIE] != held  # each login a session of its own
        other = browser.cookies[COOKIE]
        out = browser.post(f"{API}/logout")
        assert again.status_code == out.status_code == 200
        assert "max-age=0" in out.headers["set-cookie"].lower()
        browser.cookies.clear()
        assert browser.get(f"{API}/whoami").status_code == 401
    # A session logged out is over on the server too, not only gone from the browser.
    ended = httpx.get(f"{console.url}{API}/whoami", cookies={COOKIE: other})
    assert ended.status_code == 401
    assert httpx.get(f"{console.url}{API}/whoami", cookies={COOKIE: held}).status_code == 200
    assert httpx.get(f"{console.url}{API}/whoami", cookies={COOKIE: DEFAULT_KEY}).status_code == 401
    forged = held[:-4] + ("AAAA" if not held.endswith("AAAA") else "BBBB")
    assert httpx.get(f"{console.url}{API}/whoami", cookies={COOKIE: forged}).status_code == 401
    bad = httpx.post(f"{console.url}{API}/login", json={})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "key"


def test_a_revoked_keys_console_session_stops_working(tmp_path: Path) -> None:
    key, secret = new_key("default", name="to-revoke")

    def on_store(call: Any) -> Any:
        async def run() -> Any:
            store = SQLiteStore(tmp_path / "s.db")
            try:
                return await call(store)
            finally:
                await store.close()

        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, run()).result()

    on_store(lambda store: store.create_key(key))
    auth = {"mode": "keys", "cache_seconds": 0, "admin_key": ADMIN_KEY}
    config = gateway_config("http://127.0.0.1:9", tmp_path / "s.db", auth=auth)
    with serve(create_app(config)) as url, httpx.Client(base_url=url) as browser:
        assert browser.post(f"{API}/login", json={"key": secret}).status_code == 200
        assert secret not in browser.cookies[COOKIE]
        assert browser.get(f"{API}/whoami").json()["key_id"] == key.id
        on_store(lambda store: store.revoke_key(key.id))
        revoked = browser.get(f"{API}/whoami")
        assert revoked.status_code == 401 and revoked.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.anyio
async def test_the_cookie_is_secure_over_https(tmp_path: Path) -> None:
    auth = {"mode": "keys", "admin_key": ADMIN_KEY}
    app = create_app(gateway_config("http://127.0.0.1:9", tmp_path / "s.db", auth=auth))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://localhost") as browser:
            logged = await browser.post(f"{API}/login", json={"key": ADMIN_KEY})
            assert logged.status_code == 200
            assert "; secure" in logged.headers["set-cookie"].lower()
            assert ADMIN_KEY not in logged.headers["set-cookie"]
            assert (await browser.get(f"{API}/whoami")).json()["admin"] is True


def test_search_lands_on_each_kind_of_id(console: Console) -> None:
    ids = console.seeded.ids
    expected = {
        ids["middle"]: ("response", ids["middle"], "default"),
        f"req_{ids['root']}": ("response", ids["root"], "default"),
        ids["conversation"]: ("conversation", ids["conversation"], "default"),
        ids["store_conversation"]: ("store_conversation", ids["store_conversation"], "default"),
        ids["other"]: ("response", ids["other"], "team-b"),
    }
    for query, (kind, found_id, project) in expected.items():
        found = console.get(f"{API}/search", q=query).json()
        assert (found["kind"], found["id"], found["project"]) == (kind, found_id, project)
    missing = console.get(f"{API}/search", q="resp_missing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert console.get(f"{API}/search", q="").status_code == 400


def test_recent_turns_filter_and_page_newest_first(console: Console) -> None:
    ids = console.seeded.ids
    first = console.get(f"{API}/responses", limit=50).json()
    assert first["object"] == "list" and first["has_more"] and len(first["data"]) == 50
    times = [turn["created_at"] for turn in first["data"]]
    assert times == sorted(times, reverse=True)
    second = console.get(f"{API}/responses", limit=50, after=first["last_id"]).json()
    assert second["data"][0]["created_at"] < times[-1]
    every: list[str] = []
    after = None
    while True:
        page = console.get(f"{API}/responses", limit=40, **({"after": after} if after else {}))
        body = page.json()
        every += [turn["id"] for turn in body["data"]]
        if not body["has_more"]:
            break
        after = body["last_id"]
    assert len(every) == len(set(every)) == 120 + 8
    by_model = console.get(f"{API}/responses", model="chat-model").json()["data"]
    assert [turn["id"] for turn in by_model] == [ids["injection"]]
    assert by_model[0]["preview"] == INJECTION
    failed = console.get(f"{API}/responses", status="failed").json()["data"]
    assert [turn["id"] for turn in failed] == [ids["branch_b"]]
    in_b = console.get(f"{API}/responses", project="team-b").json()["data"]
    assert [turn["id"] for turn in in_b] == [ids["other"]]
    window = console.get(f"{API}/responses", since=START + 100, until=START + 200).json()
    assert [turn["id"] for turn in window["data"]] == [ids["branch_b"], ids["branch_a"]]
    assert console.get(f"{API}/responses", key="static:none").json()["data"] == []
    assert len(console.get(f"{API}/responses", key="static:ci", limit=200).json()["data"]) == 128
    assert console.get(f"{API}/responses", since="soon").status_code == 400


def test_a_turn_and_its_chain_a_page_at_a_time(console: Console) -> None:
    ids, seeded = console.seeded.ids, console.seeded
    middle = console.get(f"{API}/responses/{ids['middle']}").json()
    assert [child["id"] for child in middle["children"]] == [ids["branch_a"], ids["branch_b"]]
    assert middle["route"]["answered_by"] == "echo" and middle["cost_usd"] == 0.0015
    assert middle["latency_seconds"] == 1.25 and middle["time_to_first_token_seconds"] is None
    assert middle["usage"] == {
        "input_tokens": 100,
        "cached_tokens": 40,
        "output_tokens": 20,
        "reasoning_tokens": 5,
    }
    chain = console.get(f"{API}/responses/{ids['image']}/chain").json()
    assert [turn["id"] for turn in chain["data"]] == [
        ids["image"], ids["tools"], ids["branch_a"], ids["middle"], ids["root"]
    ]  # fmt: skip
    assert chain["has_more"] is False and chain["next"] is None
    assert chain["data"][-1]["instructions"] == "Be brief."
    deep = console.get(f"{API}/responses/{seeded.deep_head}/chain", limit=50).json()
    assert len(deep["data"]) == 50 and deep["has_more"]
    assert deep["next"] == "resp_deep_00069"
    last = console.get(f"{API}/responses/resp_deep_00019/chain", limit=50).json()
    assert len(last["data"]) == 20 and not last["has_more"] and last["next"] is None


def test_a_conversation_and_the_agent_store(console: Console) -> None:
    ids = console.seeded.ids
    found = console.get(f"{API}/conversations/{ids['conversation']}").json()
    assert found["metadata"] == {"topic": "demo"} and found["project"] == "default"
    texts = [item["content"][0]["text"] for item in found["items"]["data"]]
    assert texts == ["hello conversation", "hello back"]
    listed = console.get(f"{API}/store/conversations").json()["data"]
    default = next(group for group in listed if group["project"] == "default")
    assert [c["conversationId"] for c in default["items"]] == [ids["store_conversation"]]
    messages = console.get(f"{API}/store/conversations/{ids['store_conversation']}").json()
    assert messages["items"][0]["payload"]["content"] == "hello agent store"
    missing = console.get(f"{API}/store/conversations/nothing")
    assert missing.status_code == 404


def test_usage_totals_equal_the_stores_in_buckets(console: Console) -> None:
    since, until = START - 3600, START + 86400 * 2
    body = console.get(f"{API}/usage", since=since, until=until, bucket="hour", by="key").json()
    assert len(body["buckets"]) == 49 and body["bucket_seconds"] == 3600
    totals = body["totals"]
    assert totals["requests"] == 128 and totals["errors"] == 1
    assert totals["input_tokens"] == 12800 and totals["cached_tokens"] == 5120
    assert totals["uncached_input_tokens"] == 7680 and totals["output_tokens"] == 2560
    assert totals["cost_usd"] == pytest.approx(128 * 0.0015)
    assert totals["latency_p50"] == totals["latency_p99"] == 1.25
    assert sum(bucket["requests"] for bucket in body["buckets"]) == 128
    assert body["buckets"][1]["requests"] == 128  # every turn falls in the hour after START
    assert [group["group"] for group in body["groups"]] == ["static:ci"]
    by_project = console.get(f"{API}/usage", since=since, until=until, by="project").json()
    assert {g["group"]: g["requests"] for g in by_project["groups"]} == {
        "default": 127,
        "team-b": 1,
    }
    only = console.get(f"{API}/usage", since=since, until=until, model="chat-model").json()
    assert only["totals"]["requests"] == 1
    mine = console.get(f"{API}/usage", auth=TEAM_B_KEY, since=since, until=until).json()
    assert mine["totals"]["requests"] == 1
    bad = console.get(f"{API}/usage", since=until, until=since)
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "since"


def test_keys_for_the_admin_only_and_never_a_secret(console: Console) -> None:
    listed = console.get(f"{API}/keys")
    assert listed.status_code == 200
    (key,) = listed.json()["data"]
    assert key["id"] == console.managed_id and key["project"] == "default"
    assert key["name"] == "console-test" and key["revoked_at"] is None
    assert (key["budget_usd"], key["budget_tokens"]) == (None, 1_000_000)
    assert "secret_hash" not in key and console.managed_secret not in listed.text
    refused = console.get(f"{API}/keys", auth=DEFAULT_KEY)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"


def test_a_project_key_sees_its_project_only(console: Console) -> None:
    ids = console.seeded.ids
    other, missing = ids["root"], ids["root"] + "x"
    for path in (
        "/responses/{}",
        "/responses/{}/chain",
    ):
        hidden = console.get(API + path.format(other), auth=TEAM_B_KEY, project="default")
        absent = console.get(API + path.format(missing), auth=TEAM_B_KEY)
        assert hidden.status_code == absent.status_code == 404
        assert hidden.text == absent.text.replace(missing, other)
    hidden = console.get(f"{API}/search", auth=TEAM_B_KEY, q=other)
    absent = console.get(f"{API}/search", auth=TEAM_B_KEY, q=missing)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.text == absent.text.replace(missing, other)
    conversation = console.get(f"{API}/conversations/{ids['conversation']}", auth=TEAM_B_KEY)
    assert conversation.status_code == 404
    assert console.get(f"{API}/search", auth=TEAM_B_KEY, q=f"req_{other}").status_code == 404
    turns = console.get(f"{API}/responses", auth=TEAM_B_KEY, project="default").json()["data"]
    assert [turn["id"] for turn in turns] == [ids["other"]]
    assert console.get(f"{API}/projects", auth=TEAM_B_KEY).json()["data"] == ["team-b"]
    assert console.get(f"{API}/projects").json()["data"] == ["default", "team-b"]
    mine = console.get(f"{API}/responses/{ids['root']}", auth=DEFAULT_KEY)
    assert mine.status_code == 200


def test_no_answer_holds_a_secret(console: Console) -> None:
    ids = console.seeded.ids
    paths = [
        "/whoami",
        "/projects",
        "/responses",
        f"/responses/{ids['middle']}",
        f"/responses/{ids['middle']}/chain",
        f"/conversations/{ids['conversation']}",
        "/conversations",
        "/store/conversations",
        "/usage",
        "/keys",
    ]
    secrets = (ADMIN_KEY, DEFAULT_KEY, TEAM_B_KEY, console.managed_secret, "secret_hash")
    for path in paths:
        for key in (ADMIN_KEY, DEFAULT_KEY):
            body = console.get(API + path, auth=key).text
            assert not any(secret in body for secret in secrets), path


def test_an_open_gateway_opens_the_console_directly(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:9", tmp_path / "s.db")
    with serve(create_app(config)) as url:
        made = httpx.post(f"{url}/v1/responses", json={"model": "echo-1", "input": "hi"})
        request_id = made.headers["x-request-id"]
        who = httpx.get(f"{url}{API}/whoami").json()
        assert who == {"auth": "none", "admin": True, "project": None, "key_id": None}
        found = httpx.get(f"{url}{API}/search", params={"q": request_id}).json()
        assert found["id"] == made.json()["id"] and found["project"] == "default"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("since", "NaN"),
        ("until", "nan"),
        ("since", "inf"),
        ("until", "-inf"),
        ("since", "1" + "0" * 400),
        ("until", "1e300"),
        ("since", "-5"),
    ],
)
def test_a_time_that_is_no_time_is_a_400_naming_it(console: Console, name: str, value: str) -> None:
    for path in ("/usage", "/responses"):
        answer = console.get(API + path, **{name: value})
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["error"]["param"] == name, path


def test_the_favicon_is_served(console: Console) -> None:
    icon = console.get("/favicon.ico", auth=None)
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg")
    assert console.get("/console/static/favicon.svg", auth=None).content == icon.content


def test_responses_conversations_list_a_page_at_a_time_by_cursor(tmp_path: Path) -> None:
    auth = {
        "mode": "keys",
        "admin_key": ADMIN_KEY,
        "keys": [
            {"key": DEFAULT_KEY, "project": "default", "name": "ci"},
            {"key": TEAM_B_KEY, "project": "team-b", "name": "b"},
        ],
    }
    config = gateway_config("http://127.0.0.1:9", tmp_path / "s.db", auth=auth)
    with serve(create_app(config)) as url:

        def call(method: str, path: str, key: str = ADMIN_KEY, **kwargs: Any) -> httpx.Response:
            headers = {"authorization": f"Bearer {key}"}
            return httpx.request(method, f"{url}{path}", headers=headers, timeout=30, **kwargs)

        made: dict[str, list[str]] = {"default": [], "team-b": []}
        for n, key in enumerate([DEFAULT_KEY] * 3 + [TEAM_B_KEY] * 2):
            body = {"metadata": {"n": str(n)}, "items": [{"role": "user", "content": f"hi {n}"}]}
            created = call("POST", "/v1/conversations", key, json=body)
            assert created.status_code == 200, created.text
            made["default" if key == DEFAULT_KEY else "team-b"].append(created.json()["id"])
        seen: list[str] = []
        pages = 0
        cursor: str | None = None
        cursors: list[str | None] = []
        while True:
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = call("GET", f"{API}/conversations", params=params).json()
            pages += 1
            assert page["object"] == "list" and len(page["data"]) <= 2
            seen += [c["id"] for c in page["data"]]
            if not page["has_more"]:
                assert page["next_cursor"] is None
                break
            cursor = page["next_cursor"]
            cursors.append(cursor)
        assert seen == made["default"] + made["team-b"] and pages == 3
        first = call("GET", f"{API}/conversations", params={"limit": 1}).json()["data"][0]
        assert first["project"] == "default" and first["metadata"] == {"n": "0"}
        assert first["updated_at"] >= first["created_at"]
        opened = call("GET", f"{API}/conversations/{first['id']}").json()
        assert opened["items"]["data"][0]["content"][0]["text"] == "hi 0"
        mine = call("GET", f"{API}/conversations", TEAM_B_KEY, params={"project": "default"})
        assert [c["id"] for c in mine.json()["data"]] == made["team-b"]
        only = call("GET", f"{API}/conversations", params={"project": "team-b"}).json()
        assert [c["id"] for c in only["data"]] == made["team-b"]
        # Nonsense, JSON of the wrong shape, and a cursor into another project's conversations.
        for bad in ("nonsense", "W10", cursors[0] or ""):
            refused = call("GET", f"{API}/conversations", TEAM_B_KEY, params={"cursor": bad})
            assert refused.status_code == 400 and refused.json()["error"]["param"] == "cursor"


def test_the_keys_list_shows_what_each_key_used_this_month(tmp_path: Path) -> None:
    key, secret = new_key("default", name="metered", budget_tokens=10_000, requests_per_minute=30)

    async def create() -> None:
        store = SQLiteStore(tmp_path / "s.db")
        try:
            await store.create_key(key)
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, create()).result()
    auth = {"mode": "keys", "cache_seconds": 0, "admin_key": ADMIN_KEY}
    config = gateway_config("http://127.0.0.1:9", tmp_path / "s.db", auth=auth)
    with serve(create_app(config)) as url:
        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        before = httpx.get(f"{url}{API}/keys", headers=admin).json()["data"][0]["usage"]
        assert before["spent_usd"] == 0 and before["tokens"] == 0
        assert before["turns_last_minute"] == 0 and len(before["month"]) == 7
        made = httpx.post(
            f"{url}/v1/responses",
            headers={"authorization": f"Bearer {secret}"},
            json={"model": "echo-1", "input": "count my tokens"},
        )
        assert made.status_code == 200, made.text
        usage = made.json()["usage"]
        (listed,) = httpx.get(f"{url}{API}/keys", headers=admin).json()["data"]
        assert listed["usage"]["tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
        assert listed["usage"]["turns_last_minute"] == 1
        assert listed["budget_tokens"] == 10_000 and listed["requests_per_minute"] == 30
        assert secret not in str(listed)
