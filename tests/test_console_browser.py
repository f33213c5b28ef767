"""The console in a real browser (Debian's Chromium through Playwright) against a real
gateway on a loopback port: finding each kind of id, chains with branches, a 10,000-turn
chain paged, a conversation, usage against ``gateway usage``, what a project key cannot
reach, and stored markup shown as text. Screenshots go to ``.artifacts/console/``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway import create_app, load_config, parse_config
from gateway.turn.spending import spend_name
from session import SQLiteStore, new_key

from .console_data import INJECTION, LONG_MODEL, START, Seeded, seed, seed_real_ids
from .servers import run_cli, serve

pytestmark = [pytest.mark.system]

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parent.parent / ".artifacts" / "console"
ADMIN_KEY = "sk-admin-console-0123456789"
DEFAULT_KEY = "sk-project-default-0123456789"
TEAM_B_KEY = "sk-project-team-b-0123456789"
DEEP = 10_000

sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
        allow_module_level=True,
    )


class Site:
    def __init__(self, url: str, config: str, seeded: Seeded) -> None:
        self.url, self.config, self.seeded = url, config, seeded


SPENT_USD = 1.25


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("console")
    config_path = root / "config.yaml"
    config_path.write_text(
        yaml.safe_dump(
            {
                "auth": {
                    "mode": "keys",
                    "cache_seconds": 0,
                    "admin_key": ADMIN_KEY,
                    "keys": [
                        {"key": DEFAULT_KEY, "project": "default", "name": "ci"},
                        {"key": TEAM_B_KEY, "project": "team-b", "name": "b"},
                    ],
                },
                "session": {"sqlite": {"path": str(root / "s.db")}},
                "providers": {"echo": {"wire_api": "echo"}},
                "default_provider": "echo",
            }
        )
    )

    async def fill() -> Seeded:
        store = SQLiteStore(root / "s.db")
        try:
            key, _ = new_key("default", name="ops", requests_per_minute=60, budget_usd=5.0)
            await store.create_key(key)
            # This month's spend, as the gateway's turns count it; the month after too, in
            # case the month turns before the page reads it.
            now = time.time()
            for name in {spend_name(key.id, now), spend_name(key.id, now + 86400)}:
                await store.add_spend(name, SPENT_USD)
            seeded = await seed(store, deep=DEEP)
            seeded.ids.update(await seed_real_ids(store))
            return seeded
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as thread:  # Playwright's loop may run in this thread
        seeded = thread.submit(asyncio.run, fill()).result()
    with serve(create_app(load_config(config_path))) as url:
        yield Site(url, str(config_path), seeded)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


class Watched:
    """A page, and what it did that it must not: dialogs, CSP violations, other hosts."""

    def __init__(self, page: Any, site: Site) -> None:
        self.page, self.site = page, site
        self.dialogs: list[str] = []
        self.violations: list[str] = []
        self.foreign: list[str] = []
        page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        page.on(
            "console",
            lambda message: (
                self.violations.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        page.on(
            "request",
            lambda request: (
                None
                if request.url.startswith((site.url, "data:"))
                else self.foreign.append(request.url)
            ),
        )

    def open(self, hash_: str) -> None:
        self.page.goto(f"{self.site.url}/console#{hash_}")

    def login(self, key: str) -> None:
        self.open("/")
        self.page.fill("#login-key", key)
        self.page.click("#login button[type=submit]")
        self.page.wait_for_selector("#turns tbody tr")

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)

    def clean(self) -> None:
        assert self.dialogs == [] and self.violations == [] and self.foreign == []


@pytest.fixture
def admin(browser: Any, site: Site) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page(), site)
    watched.login(ADMIN_KEY)
    yield watched
    watched.clean()
    context.close()


def search(watched: Watched, query: str) -> None:
    watched.page.fill("#search-q", query)
    watched.page.press("#search-q", "Enter")


def test_each_kind_of_id_is_found(admin: Watched) -> None:
    page, ids = admin.page, admin.site.seeded.ids
    admin.shot("turns")
    search(admin, ids["middle"])
    page.wait_for_selector(f"#turn-{ids['middle']}.head")
    assert "second question" in page.inner_text("#chain")
    search(admin, f"req_{ids['root']}")  # a request id
    page.wait_for_selector(f"#turn-{ids['root']}.head")
    search(admin, ids["conversation"])
    page.wait_for_selector("#timeline")
    assert "hello conversation" in page.inner_text("#timeline")
    assert "hello back" in page.inner_text("#timeline")
    admin.shot("conversation")
    search(admin, ids["store_conversation"])
    page.wait_for_selector("#messages")
    assert "hello agent store" in page.inner_text("#messages")
    admin.shot("agent-store")
    search(admin, "resp_nothing_here")
    page.wait_for_selector("#failure")
    assert "Nothing found" in page.inner_text("#failure")


def test_a_chain_shows_every_kind_of_item_and_its_branches(admin: Watched) -> None:
    page, ids = admin.page, admin.site.seeded.ids
    admin.open(f"/turn/{ids['image']}")
    page.wait_for_selector(f"#turn-{ids['image']}.head")
    text = page.inner_text("#chain")
    for expected in (
        "Be brief.",  # instructions
        "first question",
        "answer to first question",
        "Thinking about the weather.",  # a reasoning summary
        "get_weather",
        '"city": "Paris"',  # tool call arguments
        '"temp": 21',  # tool output
        "answered by",
        "timeout",  # a failed attempt
        "req_resp_root",
        "static:ci",
        "$0.001500",
        "1.250 s",  # latency
        "not stored",  # time to first token
        "https://example.com/cat.png",  # shown as text, not fetched
        "affinity (chain) moved from primary primary#0: http_500",
    ):
        assert expected in text, expected
    # Five turns of 100 input tokens, 40 of them cached each.
    cache = page.inner_text("#chain-cache")
    assert "prompt cache hit rate 40.0% (200 of 500 input tokens cached" in cache
    image = page.locator(f"#turn-{ids['image']} img.shown")
    assert image.count() == 1
    assert page.evaluate("el => el.naturalWidth", image.element_handle()) == 1
    admin.shot("chain")
    branches = page.locator(f"#turn-{ids['middle']} .branches")
    assert "2 turns continue this one" in branches.inner_text()
    branches.locator(f"a[href*='{ids['branch_b']}']").click()
    page.wait_for_selector(f"#turn-{ids['branch_b']}.head")
    assert "upstream failed" in page.inner_text(f"#turn-{ids['branch_b']}")
    assert page.locator(f"#turn-{ids['branch_a']}").count() == 0
    admin.shot("branch")


def test_a_chain_of_ten_thousand_turns_opens_a_page_at_a_time(admin: Watched) -> None:
    page, seeded = admin.page, admin.site.seeded
    started = time.perf_counter()
    admin.open(f"/turn/{seeded.deep_head}")
    page.wait_for_selector(f"#turn-{seeded.deep_head}.head")
    opened = time.perf_counter() - started
    print(f"\nthe head of a {DEEP}-turn chain opened in {opened * 1000:.0f} ms")
    assert page.locator("#chain article.turn").count() == 50
    assert "older turns remain" in page.inner_text("#chain-count")
    admin.shot("deep-chain")
    page.click("#older")
    page.locator("#chain article.turn").nth(99).wait_for()  # no wait_for_function: CSP forbids eval
    assert page.locator(f"#turn-resp_deep_{DEEP - 100:05d}").count() == 1


def test_the_admin_sees_managed_keys_with_their_limits(admin: Watched) -> None:
    admin.open("/keys")
    row = admin.page.locator("#keys tbody tr", has_text="ops")
    row.wait_for()
    assert "60 requests/min, $5/month" in row.inner_text()
    admin.shot("keys")


def test_stored_markup_is_shown_as_text(admin: Watched) -> None:
    page, ids = admin.page, admin.site.seeded.ids
    admin.open(f"/turn/{ids['injection']}")
    page.wait_for_selector(f"#turn-{ids['injection']}.head")
    assert INJECTION in page.inner_text(f"#turn-{ids['injection']}")
    assert page.locator("#chain script, #chain img[src='x']").count() == 0
    admin.open("/?model=chat-model")
    page.wait_for_selector(f"#turns a[href*='{ids['injection']}']")
    assert "<script>alert(1)</script>" in page.inner_text("#turns")
    admin.shot("injection")
    assert admin.dialogs == []


def test_usage_shows_what_gateway_usage_prints(admin: Watched) -> None:
    page, site = admin.page, admin.site
    since = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(START - 86400))
    until = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() + 86400))
    admin.open(f"/usage?since={since}&until={until}&bucket=day&by=project")
    page.wait_for_selector("#usage-totals")
    page.wait_for_selector(".chart canvas")
    admin.shot("usage")
    shown = {
        label: page.inner_text(f"#usage-totals [data-total='{label}'] b")
        for label in ("requests", "input tokens", "output tokens", "cached", "reasoning", "cost")
    }
    printed = run_cli("usage", "--config", site.config)
    assert printed.returncode == 0, printed.stderr
    header, *lines = [line.split() for line in printed.stdout.splitlines()]
    rows = [dict(zip(header, line, strict=True)) for line in lines]
    names = ("RESPONSES", "INPUT", "OUTPUT", "CACHED", "REASONING")
    totals = [sum(int(row[name]) for row in rows) for name in names]
    cost = sum(float(row["COST_USD"]) for row in rows)
    assert [int(shown[label]) for label in ("requests", "input tokens", "output tokens")] == totals[
        :3
    ]
    assert [int(shown["cached"]), int(shown["reasoning"])] == totals[3:]
    assert shown["cost"] == f"${cost:.6f}"
    groups = page.inner_text("#usage-groups")
    assert "default" in groups and "team-b" in groups


def test_a_project_key_reaches_only_its_project(browser: Any, site: Site) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page(), site)
    page, ids = watched.page, site.seeded.ids
    watched.login(TEAM_B_KEY)
    assert "project team-b" in page.inner_text("#who")
    assert ids["root"] not in page.inner_text("#turns")
    assert ids["other"] in page.inner_text("#turns")
    search(watched, ids["root"])
    page.wait_for_selector("#failure")
    watched.open(f"/turn/{ids['root']}?project=default")
    page.wait_for_selector("#failure")
    assert "Not found" in page.inner_text("main")
    watched.shot("project-key-refused")

    def fetched(path: str) -> Any:
        return page.evaluate(
            "async (path) => { const r = await fetch(path); return [r.status, await r.text()]; }",
            path,
        )

    other = fetched(f"/v1/gateway/console/responses/{ids['root']}?project=default")
    missing = fetched(f"/v1/gateway/console/responses/{ids['root']}x")
    assert other[0] == missing[0] == 404
    assert other[1] == missing[1].replace(f"{ids['root']}x", ids["root"])
    assert fetched("/v1/gateway/console/keys")[0] == 403
    page.click("#logout")
    page.wait_for_selector("#login")
    assert fetched("/v1/gateway/console/whoami")[0] == 401
    watched.clean()
    context.close()


def test_the_console_fits_a_phone(browser: Any, site: Site) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 800})
    watched = Watched(context.new_page(), site)
    watched.login(DEFAULT_KEY)
    watched.shot("turns-375")
    watched.open(f"/turn/{site.seeded.ids['image']}")
    watched.page.wait_for_selector(f"#turn-{site.seeded.ids['image']}.head")
    watched.shot("chain-375")
    width = watched.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375
    watched.clean()
    context.close()


def test_the_console_works_from_the_keyboard(admin: Watched) -> None:
    """Tab reaches the search box, Enter searches, and a branch is followed by Tab and Enter."""
    page, ids = admin.page, admin.site.seeded.ids
    admin.open("/")
    page.reload()  # focus at the start of the document
    page.wait_for_selector("#turns tbody tr")
    names = []
    for _ in range(20):
        page.keyboard.press("Tab")
        focused = page.locator(":focus")
        names.append(focused.first.get_attribute("id") or focused.first.inner_text())
        if page.locator("#search-q:focus").count() == 1:
            break
    else:
        raise AssertionError(f"Tab never reached the search box: {names}")
    page.keyboard.type(ids["middle"])
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#turn-{ids['middle']}.head")
    branch = page.locator(f"#turn-{ids['middle']} .branches a[href*='{ids['branch_a']}']")
    branch.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#turn-{ids['branch_a']}.head")


def _context(browser: Any, site: Site, width: int, height: int, key: str = ADMIN_KEY) -> Watched:
    context = browser.new_context(viewport={"width": width, "height": height})
    watched = Watched(context.new_page(), site)
    watched.login(key)
    return watched


def _fits_the_window(watched: Watched) -> None:
    scroll, inner = watched.page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth]"
    )
    assert scroll <= inner, f"the page is {scroll} px wide in a {inner} px window"


def test_every_page_fits_a_phone_without_scrolling_sideways(browser: Any, site: Site) -> None:
    watched = _context(browser, site, 390, 844)
    page, ids = watched.page, site.seeded.ids
    _fits_the_window(watched)
    watched.shot("turns-390")
    for head in (ids["real_head"], ids["image"], site.seeded.deep_head):
        watched.open(f"/turn/{head}")
        page.wait_for_selector(f"#turn-{head}.head")
        _fits_the_window(watched)
    watched.open(f"/turn/{ids['real_head']}")
    page.wait_for_selector(f"#turn-{ids['real_head']}.head")
    watched.shot("chain-390")
    for hash_, ready in (
        (f"/?model={LONG_MODEL}", f"#turns a[href*='{ids['real_head']}']"),
        ("/conversations", "#conversations tbody tr"),
        ("/keys", "#keys tbody tr"),
        ("/usage", ".chart canvas"),
    ):
        watched.open(hash_)
        page.wait_for_selector(ready)
        _fits_the_window(watched)
    watched.shot("usage-390")
    watched.clean()
    page.context.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_recent_turns_fit_their_box_and_the_text_column_takes_the_rest(
    browser: Any, site: Site, width: int, height: int
) -> None:
    watched = _context(browser, site, width, height)
    page, ids = watched.page, site.seeded.ids
    watched.open(f"/?model={LONG_MODEL}")  # ids, request ids and a model name at full length
    page.wait_for_selector(f"#turns a[href*='{ids['real_head']}']")
    box = page.locator("#turns").locator("xpath=..").bounding_box()
    table = page.locator("#turns").bounding_box()
    assert table["width"] <= box["width"] + 0.5, (table, box)
    right = box["x"] + box["width"] + 0.5
    widths = {}
    for header in page.locator("#turns thead th").all():
        shown = header.bounding_box()
        assert shown["x"] + shown["width"] <= right, (header.inner_text(), shown, box)
        widths[header.inner_text()] = shown["width"]
    assert {"Key", "First words"} <= set(widths)
    assert widths["First words"] == max(widths.values()), widths
    preview = page.locator(f"#turns tr:has(a[href*='{ids['real_head']}']) td.col-preview")
    assert preview.get_attribute("title", timeout=1000).startswith("a follow-up question")
    _fits_the_window(watched)
    watched.shot(f"turns-{width}")
    watched.clean()
    page.context.close()


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 800)])
def test_the_header_stays_in_view_on_a_chain_scrolled_to_its_turn(
    browser: Any, site: Site, width: int, height: int
) -> None:
    watched = _context(browser, site, width, height)
    page, head = watched.page, site.seeded.deep_head
    watched.open(f"/turn/{head}")
    page.wait_for_selector(f"#turn-{head}.head")
    assert page.evaluate("window.scrollY") > 0  # the newest turn is last: scrolled down to it
    for selector in ("nav a[href='#/']", "nav a[href='#/conversations']", "#search-q"):
        shown = page.locator(selector).bounding_box()
        assert shown is not None and shown["y"] >= 0, selector
        assert shown["y"] + shown["height"] <= height, selector
    header = page.locator("header.top").bounding_box()
    card = page.locator(f"#turn-{head}").bounding_box()
    assert card["y"] >= header["y"] + header["height"]  # the turn is not under the header
    watched.shot(f"chain-header-{width}")
    search(watched, site.seeded.ids["middle"])  # and the search works from there
    page.wait_for_selector(f"#turn-{site.seeded.ids['middle']}.head")
    watched.clean()
    page.context.close()


# The latency chart's series colours (p50, p90, p99) as the canvas holds them.
LATENCY_COLOURS = [(14, 165, 233), (249, 115, 22), (220, 38, 38)]
PIXELS_OF = """([canvas, colours]) => {
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let found = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] < 200) continue;
    if (colours.some(([r, g, b]) => Math.abs(data[i] - r) + Math.abs(data[i + 1] - g)
        + Math.abs(data[i + 2] - b) < 30)) found++;
  }
  return found;
}"""


def test_traffic_in_one_bucket_is_drawn_and_tables_speak_in_words(admin: Watched) -> None:
    page = admin.page
    since = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(START - 86400))
    until = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(START + 9 * 86400))
    admin.open(f"/usage?since={since}&until={until}&bucket=day&by=project")  # one day has it all
    page.wait_for_selector(".chart canvas")
    latency = page.locator(".chart", has_text="Latency").locator("canvas")
    drawn = page.evaluate(PIXELS_OF, [latency.element_handle(), LATENCY_COLOURS])
    assert drawn > 10, "the latency of the one bucket with traffic is not drawn"
    headers = page.locator("#usage-groups thead th").all_inner_texts()
    assert headers[:1] == ["Project"]
    assert {"Requests", "Input tokens", "Cached tokens", "Cost (USD)"} <= set(headers)
    assert not [text for text in headers if "_" in text], headers
    legends = page.locator(".chart .u-legend").all_inner_texts()
    assert not [text for text in legends if "_" in text], legends
    admin.shot("usage-one-bucket")


def test_the_keys_page_shows_what_each_key_used_of_its_limits(admin: Watched) -> None:
    admin.open("/keys")
    row = admin.page.locator("#keys tbody tr", has_text="ops")
    row.wait_for()
    spend = row.locator("[data-used$='spend']")
    assert f"${SPENT_USD:.2f} of $5.00" in spend.inner_text()
    assert spend.locator("meter").get_attribute("value") == str(SPENT_USD / 5.0)
    assert "of 60 turns" in row.locator("[data-used='last minute']").inner_text()
    admin.shot("keys-used")


def test_responses_conversations_are_listed_and_each_opens_its_items(admin: Watched) -> None:
    page, ids = admin.page, admin.site.seeded.ids
    page.click("nav a[href='#/conversations']")
    row = page.locator("#conversations tbody tr", has_text=ids["conversation"])
    row.wait_for()
    assert "default" in row.inner_text() and "demo" in row.inner_text()
    admin.shot("conversations")
    row.locator("a").click()
    page.wait_for_selector("#timeline")
    assert "hello conversation" in page.inner_text("#timeline")


def test_the_page_names_its_icon(admin: Watched) -> None:
    icon = admin.page.locator("link[rel='icon']").get_attribute("href")
    answer = admin.page.request.get(f"{admin.site.url}{icon}")
    assert answer.status == 200 and answer.headers["content-type"] == "image/svg+xml"
    assert admin.page.request.get(f"{admin.site.url}/favicon.ico").status == 200


def test_a_turns_timeline_shows_its_resolve_attempts_tool_call_and_saves(
    browser: Any, fake_upstream: Any, dice: Any, tmp_path: Path
) -> None:
    """A real turn, chained, retried, fallen back and calling an MCP tool, traced or not:
    the console draws what it stored of its steps as a waterfall."""
    from .fake_upstream import Reply
    from .mcp_gateway import ROLL, dice_tool
    from .test_tracing import ERROR, wire_config

    fake, url = fake_upstream
    raw = wire_config("chat_completions", {"openai": url}, tmp_path / "t.db", dice, None)
    keys = [{"key": DEFAULT_KEY, "project": "default"}]
    raw["auth"] = {"mode": "keys", "admin_key": ADMIN_KEY, "keys": keys}
    config = parse_config(raw, env={})
    with serve(create_app(config)) as gateway:
        headers = {"Authorization": f"Bearer {DEFAULT_KEY}"}
        first = httpx.post(
            f"{gateway}/v1/responses", json={"model": "primary", "input": "hi"}, headers=headers
        ).json()["id"]
        fake.script(
            Reply(status=503, error_body=ERROR),
            Reply(status=502, error_body=ERROR),
            Reply(tool_calls=[("c1", ROLL, '{"sides": 6}')], finish_reason="tool_calls"),
            Reply(text="You rolled a six."),
        )
        body = {
            "model": "primary",
            "input": "roll a die",
            "previous_response_id": first,
            "tools": [dice_tool(dice)],
            "stream": True,
        }
        with httpx.stream(
            "POST", f"{gateway}/v1/responses", json=body, headers=headers, timeout=30
        ) as answer:
            lines = [line for line in answer.iter_lines() if line.startswith("data: ")]
        chained = json.loads(lines[-1][6:])["response"]["id"]
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        watched = Watched(context.new_page(), Site(gateway, "", Seeded()))
        try:
            watched.login(ADMIN_KEY)
            watched.open(f"/turn/{chained}")
            steps = watched.page.locator(f"#turn-{chained} ol.steps li")
            steps.first.wait_for()
            kinds = [steps.nth(i).get_attribute("data-kind") for i in range(steps.count())]
            assert kinds == [
                "resolve",
                "attempt",
                "attempt",
                "attempt",
                "save",
                "tool",
                "attempt",
                "save",
            ], kinds
            text = watched.page.inner_text(f"#turn-{chained} .timeline")
            assert "east/model-primary" in text and "(http_503)" in text
            assert "west/model-backup" in text and "(answered)" in text
            assert "tool roll" in text and "first token" in text and "depth 1" in text
            assert watched.page.locator(f"#turn-{chained} .step.failed").count() == 2
            watched.page.locator(f"#turn-{chained} .timeline").scroll_into_view_if_needed()
            watched.shot("timeline")
            watched.clean()
        finally:
            context.close()
