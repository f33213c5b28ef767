"""Strict fakes of the search backends the gateway queries, served over real HTTP.

Each refuses what the real one does, from its public API reference:

- SearXNG (``GET /search``): ``q`` required; ``format`` must be an enabled format
  (``json`` here), another is a 403 as on an instance where it is not enabled.
- Brave Web Search (``GET /res/v1/web/search``): the ``X-Subscription-Token`` header
  (else 422 ``SUBSCRIPTION_TOKEN_INVALID``); ``q`` non-empty, at most 400 characters and
  50 words; ``count`` 1-20; ``offset`` 0-9; ``country`` one of its two-letter codes.
- Tavily (``POST /search``): ``Authorization: Bearer tvly-...`` (else 401); a JSON body
  with ``query``; ``max_results`` 0-20; ``include_domains`` an array of strings; no field
  it does not document.

All three search one small index of pages; ``site:`` operators (SearXNG, Brave) and
``include_domains`` (Tavily) keep a page only when its host is the domain or under it.
``mode`` makes one misbehave: ``down`` (HTTP 500), ``slow`` (waits for ``release``) or
``garbage`` (a body that is not JSON).
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

BRAVE_KEY = "brave-test-token"
TAVILY_KEY = "tvly-test-key"
BRAVE_COUNTRIES = frozenset(
    {
        *("AR", "AU", "AT", "BE", "BR", "CA", "CL", "DK", "FI", "FR", "DE", "HK", "IN"),
        *("ID", "IT", "JP", "KR", "MY", "MX", "NL", "NZ", "NO", "CN", "PL", "PT", "PH"),
        *("RU", "SA", "ZA", "ES", "SE", "CH", "TW", "TR", "GB", "US", "ALL"),
    }
)
TAVILY_FIELDS = frozenset(
    {
        "query",
        "auto_parameters",
        "topic",
        "search_depth",
        "chunks_per_source",
        "max_results",
        "time_range",
        "days",
        "start_date",
        "end_date",
        "include_answer",
        "include_raw_content",
        "include_images",
        "include_image_descriptions",
        "include_favicon",
        "include_domains",
        "exclude_domains",
        "country",
        "include_usage",
    }
)
_SITE = re.compile(r"\(?\bsite:(\S+?)\)?(?=\s|$)")


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    text: str


PAGES = (
    Page("https://www.python.org/downloads/", "Download Python", "Python 3.14 is the newest."),
    Page("https://docs.python.org/3/whatsnew/", "What's New in Python", "Python changes."),
    Page("https://peps.python.org/pep-0745/", "PEP 745 Python 3.14 schedule", "Python dates."),
    Page("https://en.wikipedia.org/wiki/Python", "Python (programming language)", "Python."),
    Page("https://example.com/weather/paris", "Paris weather", "Sunny in Paris, 21 C."),
)


def _host_in(url: str, domains: list[str]) -> bool:
    host = urlsplit(url).hostname or ""
    return any(host == d or host.endswith("." + d) for d in domains)


def matches(query: str, domains: list[str]) -> list[Page]:
    """The pages holding every word of ``query`` (case-insensitive), within ``domains``."""
    words = [w.lower() for w in query.split() if w.upper() != "OR"]
    found = []
    for page in PAGES:
        haystack = f"{page.title} {page.text} {page.url}".lower()
        if all(word in haystack for word in words) and (not domains or _host_in(page.url, domains)):
            found.append(page)
    return found


def split_sites(query: str) -> tuple[str, list[str]]:
    """The words of a query and the domains of its ``site:`` operators."""
    domains = _SITE.findall(query)
    words = _SITE.sub("", query).replace("(", " ").replace(")", " ")
    return " ".join(w for w in words.split() if w.upper() != "OR"), domains


@dataclass
class FakeSearch:
    """One backend (``searxng``, ``brave`` or ``tavily``) and what it was asked."""

    kind: str
    mode: str = "ok"
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)

    def reset(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests.clear()
        self.release = threading.Event()
        self.arrived = threading.Event()

    async def _misbehave(self) -> Response | None:
        self.arrived.set()
        if self.mode == "down":
            return PlainTextResponse("Internal Server Error", status_code=500)
        if self.mode == "garbage":
            return PlainTextResponse("<html><body>Too many requests</body></html>")
        if self.mode == "slow":
            await asyncio.to_thread(self.release.wait)
        return None

    async def searxng(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.requests.append({"params": params, "headers": dict(request.headers)})
        if params.get("format") != "json":
            return PlainTextResponse("Forbidden", status_code=403)
        if not params.get("q"):
            return PlainTextResponse("Bad Request", status_code=400)
        if (refused := await self._misbehave()) is not None:
            return refused
        words, domains = split_sites(params["q"])
        results = [
            {
                "url": page.url,
                "title": page.title,
                "content": page.text,
                "engine": "duckduckgo",
                "engines": ["duckduckgo"],
                "parsed_url": list(urlsplit(page.url)),
                "template": "default.html",
                "positions": [1],
                "score": 1.0,
                "category": "general",
            }
            for page in matches(words, domains)
        ]
        return JSONResponse(
            {
                "query": params["q"],
                "number_of_results": len(results),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    async def brave(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.requests.append({"params": params, "headers": dict(request.headers)})
        if request.headers.get("x-subscription-token") != BRAVE_KEY:
            return _brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided token is invalid.")
        q = params.get("q", "")
        if not q or len(q) > 400 or len(q.split()) > 50:
            return _brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
        count, offset = params.get("count", "20"), params.get("offset", "0")
        if not count.isdigit() or not 1 <= int(count) <= 20:
            return _brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
        if not offset.isdigit() or not 0 <= int(offset) <= 9:
            return _brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
        if params.get("country", "US") not in BRAVE_COUNTRIES:
            return _brave_error(422, "VALIDATION", "Unable to validate request parameter(s)")
        if (refused := await self._misbehave()) is not None:
            return refused
        words, domains = split_sites(q)
        found = matches(words, domains)[: int(count)]
        body: dict[str, Any] = {"type": "search", "query": {"original": q}}
        if found:  # Brave leaves ``web`` out when nothing matched
            body["web"] = {
                "type": "search",
                "results": [
                    {
                        "type": "search_result",
                        "title": page.title,
                        "url": page.url,
                        "description": page.text,
                        "is_source_local": False,
                        "language": "en",
                    }
                    for page in found
                ],
            }
        return JSONResponse(body)

    async def tavily(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        self.requests.append({"body": body, "headers": dict(request.headers)})
        if request.headers.get("authorization") != f"Bearer {TAVILY_KEY}":
            return JSONResponse(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401
            )
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return JSONResponse({"detail": {"error": "Query is missing."}}, 400)
        unknown = set(body) - TAVILY_FIELDS
        count = body.get("max_results", 5)
        domains = body.get("include_domains", [])
        if (
            unknown
            or not isinstance(count, int)
            or not 0 <= count <= 20
            or not isinstance(domains, list)
            or not all(isinstance(d, str) for d in domains)
        ):
            return JSONResponse({"detail": {"error": "Invalid request parameters."}}, 400)
        if (refused := await self._misbehave()) is not None:
            return refused
        found = matches(body["query"], domains)[:count]
        return JSONResponse(
            {
                "query": body["query"],
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": [
                    {
                        "title": page.title,
                        "url": page.url,
                        "content": page.text,
                        "score": 0.9,
                        "raw_content": None,
                    }
                    for page in found
                ],
                "response_time": 0.4,
                "request_id": "req-test",
            }
        )

    @property
    def app(self) -> Starlette:
        routes = {
            "searxng": [Route("/search", self.searxng, methods=["GET"])],
            "brave": [Route("/res/v1/web/search", self.brave, methods=["GET"])],
            "tavily": [Route("/search", self.tavily, methods=["POST"])],
        }[self.kind]
        return Starlette(routes=routes)


def _brave_error(status: int, code: str, detail: str) -> Response:
    error = {"id": "err-test", "status": status, "code": code, "detail": detail}
    return JSONResponse({"type": "ErrorResponse", "error": error, "time": 0}, status)


def backend_settings(kind: str, url: str) -> dict[str, Any]:
    """The ``web_search.backends`` entry for a fake served at ``url``."""
    if kind == "searxng":
        return {"kind": "searxng", "url": url}
    if kind == "brave":
        return {"kind": "brave", "api_key": BRAVE_KEY, "url": f"{url}/res/v1/web/search"}
    return {"kind": "tavily", "api_key": TAVILY_KEY, "url": f"{url}/search"}
