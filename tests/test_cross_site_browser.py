"""A page of another site, in a real browser (Debian's Chromium through Playwright), posting
to a gateway on loopback with ``auth.mode: none``: its requests arrive and change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from gateway import create_app

from .conftest import gateway_config
from .fake_upstream import FakeUpstream
from .servers import serve
from .test_cross_site import CONVERSATION, seed_conversation
from .test_observability import scrape, value

pytestmark = [pytest.mark.system]

CHROMIUM = Path("/usr/bin/chromium")

sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():
    pytest.skip(
        "Chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
        allow_module_level=True,
    )

# The page posts without a body and with a text one, asking for no answer it could read
# (``no-cors``: the browser sends such requests without asking the gateway first).
PAGE = """<!doctype html><title>evil</title><p id="state">working</p><script>
const targets = %s;
(async () => {
  for (const url of targets) {
    await fetch(url, {method: "POST", mode: "no-cors"});
    await fetch(url, {method: "POST", mode: "no-cors", body: "{}"});
  }
  document.getElementById("state").id = "done";
})().catch(error => { document.getElementById("state").textContent = String(error); });
</script>"""


def evil_site(targets: list[str]) -> Starlette:
    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE % json.dumps(targets))

    return Starlette(routes=[Route("/", page)])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.mark.parametrize("evil_host", ["localhost", "127.0.0.1"], ids=["cross-site", "same-site"])
def test_a_page_of_another_origin_empties_no_conversation(
    browser: Any, fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, evil_host: str
) -> None:
    config = gateway_config(fake_upstream[1], tmp_path / "s.db")
    with serve(create_app(config)) as gateway:
        seed_conversation(gateway)
        store = f"{gateway}/v1/store/conversations/{CONVERSATION}"
        targets = [f"{store}/clear", f"{store}/pop", f"{gateway}/v1/gateway/routes/reset"]
        with serve(evil_site(targets)) as evil:
            context = browser.new_context()
            try:
                page = context.new_page()
                page.goto(evil.replace("127.0.0.1", evil_host))
                page.wait_for_selector("#done", state="attached")
            finally:
                context.close()
        listed = httpx.get(f"{store}/messages").json()["items"]
        assert [message["payload"] for message in listed] == [{"n": 0}, {"n": 1}, {"n": 2}]
        # They arrived, and were refused before reaching a route.
        labels = {"route": "unmatched", "method": "POST", "status": "403"}
        assert value(scrape(gateway), "gateway_requests_total", **labels) == 2 * len(targets)
