"""The search backends: how each is asked a :class:`Query` and how its answer reads.

Each backend builds one ``httpx.Request`` and parses one JSON answer into :class:`Result`s;
a refusal, a non-JSON body or one without its result list is a :class:`SearchFailure`.
What each honours of the request's options: SearXNG and Brave take ``allowed_domains``
as ``site:`` operators in the query, Tavily as ``include_domains``; Brave takes the user's
country as ``country``; the number of results goes as ``count`` (Brave) and
``max_results`` (Tavily), SearXNG's page is cut to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from ....web_search_settings import BraveBackend, SearchBackend, SearxngBackend, TavilyBackend

# Brave's web search takes these two-letter countries (its ``country`` parameter).
BRAVE_COUNTRIES = frozenset(
    {
        "AR",
        "AU",
        "AT",
        "BE",
        "BR",
        "CA",
        "CL",
        "DK",
        "FI",
        "FR",
        "DE",
        "HK",
        "IN",
        "ID",
        "IT",
        "JP",
        "KR",
        "MY",
        "MX",
        "NL",
        "NZ",
        "NO",
        "CN",
        "PL",
        "PT",
        "PH",
        "RU",
        "SA",
        "ZA",
        "ES",
        "SE",
        "CH",
        "TW",
        "TR",
        "GB",
        "US",
    }
)
MAX_QUERY_CHARS = 400  # Brave's limit; the others take as much, but a query is short


class SearchFailure(Exception):
    """A backend that could not answer: down, slow, refusing, or answering garbage."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Query:
    """One search: the words, and the request's options that shape it."""

    text: str
    count: int
    allowed_domains: tuple[str, ...] = ()
    country: str | None = None  # ISO 3166-1 alpha-2, upper case


@dataclass(frozen=True)
class Result:
    """One search result as the model reads it and a citation names it."""

    url: str
    title: str
    snippet: str


def with_sites(query: Query) -> str:
    """The query with ``site:`` operators for its allowed domains."""
    if not query.allowed_domains:
        return query.text
    sites = " OR ".join(f"site:{domain}" for domain in query.allowed_domains)
    if len(query.allowed_domains) > 1:
        sites = f"({sites})"
    return f"{query.text} {sites}"


def request(backend: SearchBackend, query: Query) -> httpx.Request:
    """The HTTP request that asks ``backend`` for ``query``."""
    if isinstance(backend, SearxngBackend):
        url = backend.url.rstrip("/") + "/search"
        params = {"q": with_sites(query), "format": "json"}
        return httpx.Request("GET", url, params=params, headers=backend.headers)
    if isinstance(backend, BraveBackend):
        params = {"q": with_sites(query)[:MAX_QUERY_CHARS], "count": str(query.count)}
        if query.country in BRAVE_COUNTRIES:
            params["country"] = query.country
        headers = {"Accept": "application/json", "X-Subscription-Token": backend.api_key}
        return httpx.Request("GET", backend.url, params=params, headers=headers)
    body: dict[str, Any] = {"query": query.text, "max_results": query.count}
    if query.allowed_domains:
        body["include_domains"] = list(query.allowed_domains)
    headers = {"Authorization": f"Bearer {backend.api_key}"}
    return httpx.Request("POST", backend.url, json=body, headers=headers)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _results(raw: Any, snippet_key: str) -> list[Result]:
    if not isinstance(raw, list):
        raise SearchFailure("the answer holds no list of results")
    found = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        url = _text(entry.get("url"))
        if not url.startswith(("http://", "https://")):
            continue
        title = _text(entry.get("title")) or url
        found.append(Result(url, title, _text(entry.get(snippet_key))))
    return found


def parse(backend: SearchBackend, answer: httpx.Response, count: int) -> list[Result]:
    """The results of ``backend``'s answer, at most ``count``; a :class:`SearchFailure`
    for a refusal or an answer that is not what the backend sends."""
    if answer.status_code != 200:
        raise SearchFailure(f"it answered HTTP {answer.status_code}")
    try:
        body = answer.json()
    except ValueError:
        raise SearchFailure("its answer is not JSON") from None
    if not isinstance(body, dict):
        raise SearchFailure("its answer is not a JSON object")
    if isinstance(backend, SearxngBackend):
        results = _results(body.get("results"), "content")
    elif isinstance(backend, BraveBackend):
        web = body.get("web")
        if web is None and body.get("type") == "search":  # Brave leaves it out: no match
            results = []
        elif isinstance(web, dict):
            results = _results(web.get("results"), "description")
        else:
            raise SearchFailure("the answer holds no web results")
    elif isinstance(backend, TavilyBackend):
        results = _results(body.get("results"), "content")
    return results[:count]
