"""A request's ``web_search`` tool as the gateway runs it: its options, the function the
model is offered in its place, and the results as the model reads them.

The model cites a result by its number in square brackets (``[2]``): numbers run on over
every search of a turn, so each names one result; the gateway turns them into
``url_citation`` annotations of the answer (:mod:`.citations`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ....errors import invalid_request
from ....web_search_settings import WebSearchSettings
from ...results import Item
from ..search_tool import query_function
from .backends import MAX_QUERY_CHARS, Query, Result

WEB_SEARCH_TYPES = frozenset(
    {"web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"}
)
FUNCTION = "web_search"
SOURCES = "web_search_call.action.sources"
CITE = "Cite a result you use by its number in square brackets, e.g. [1]."
_SIZES = ("low", "medium", "high")


def has_web_search(tools: Any) -> bool:
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and tool.get("type") in WEB_SEARCH_TYPES for tool in tools
    )


def function_name(tools: list[Item]) -> str:
    """The search function's name: ``web_search``, unless the client has a function of
    that name."""
    taken = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    name, number = FUNCTION, 2
    while name in taken:
        name, number = f"{FUNCTION}_{number}", number + 1
    return name


@dataclass(frozen=True)
class Options:
    """What a request's ``web_search`` tool asks of every search of the turn."""

    count: int
    snippet_chars: int
    allowed_domains: tuple[str, ...] = ()
    country: str | None = None

    def query(self, text: str) -> Query:
        return Query(text[:MAX_QUERY_CHARS], self.count, self.allowed_domains, self.country)


def _domains(tool: Item, param: str) -> tuple[str, ...]:
    filters = tool.get("filters")
    if filters is None:
        return ()
    if not isinstance(filters, dict):
        raise invalid_request(f"Invalid '{param}.filters': expected an object.", param=param)
    domains = filters.get("allowed_domains")
    if domains is None:
        return ()
    if not isinstance(domains, list) or not all(
        isinstance(d, str) and d.strip() and " " not in d.strip() for d in domains
    ):
        raise invalid_request(
            f"Invalid '{param}.filters.allowed_domains': expected an array of domain names.",
            param=f"{param}.filters.allowed_domains",
        )
    cleaned = (d.strip().lower().removeprefix("https://").removeprefix("http://") for d in domains)
    return tuple(dict.fromkeys(d.rstrip("/") for d in cleaned))


def _country(tool: Item, param: str) -> str | None:
    location = tool.get("user_location")
    if location is None:
        return None
    country = location.get("country") if isinstance(location, dict) else None
    if country is None and isinstance(location, dict):
        return None
    if not isinstance(country, str) or len(country) != 2 or not country.isalpha():
        raise invalid_request(
            f"Invalid '{param}.user_location.country': expected a two-letter ISO country code.",
            param=f"{param}.user_location.country",
        )
    return country.upper()


def options(tools: list[Item], settings: WebSearchSettings) -> Options:
    """The options of the request's first ``web_search`` tool; a 400 naming a bad field."""
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") not in WEB_SEARCH_TYPES:
            continue
        param = f"tools[{index}]"
        size = tool.get("search_context_size") or "medium"
        if size not in _SIZES:
            raise invalid_request(
                f"Invalid '{param}.search_context_size': expected one of low, medium, high.",
                param=f"{param}.search_context_size",
            )
        # medium is the operator's figures; low halves them, high doubles them.
        scale = {"low": 0.5, "medium": 1.0, "high": 2.0}[size]
        count = min(max(1, math.ceil(settings.max_results * scale)), 20)
        chars = max(50, int(settings.snippet_chars * scale))
        return Options(count, chars, _domains(tool, param), _country(tool, param))
    return Options(settings.max_results, settings.snippet_chars)


def function(name: str, opts: Options) -> Item:
    """The function the model calls to search."""
    about = "Search the web. Returns numbered results, each a title, a URL and a snippet. "
    if opts.allowed_domains:
        about += f"Only these sites are searched: {', '.join(opts.allowed_domains)}. "
    return query_function(name, about + CITE)


def results_text(query: str, results: list[Result], first: int, chars: int) -> str:
    """The results as the model reads them, numbered from ``first``."""
    if not results:
        return f"The web search for {json.dumps(query)} found nothing."
    lines = [f"Web search results for {json.dumps(query)}:"]
    for number, result in enumerate(results, start=first):
        snippet = result.snippet if len(result.snippet) <= chars else result.snippet[:chars] + "…"
        lines += ["", f"[{number}] {result.title}", f"URL: {result.url}"]
        if snippet:
            lines.append(snippet)
    return "\n".join([*lines, "", CITE])


def failed_text(why: str) -> str:
    return f"The web search failed ({why}). Answer without it, and say that the search failed."
