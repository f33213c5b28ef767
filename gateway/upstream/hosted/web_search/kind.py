"""``web_search`` as a kind of tool the gateway runs (:class:`gateway.upstream.hosted.Kind`)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from ....web_search_settings import WebSearchSettings
from ...results import Event, Item
from ..events import done
from ..kind import Call, Emit, Turn
from ..search_tool import query_of
from .backends import Result, SearchFailure
from .citations import citations
from .history import read_back
from .items import call_item, progress, searched
from .search import search
from .tool import (
    SOURCES,
    WEB_SEARCH_TYPES,
    failed_text,
    function,
    function_name,
    options,
    results_text,
)


class WebSearch:
    """The request's ``web_search`` tool, searched through the operator's backends."""

    label = "web search"
    tool_types = WEB_SEARCH_TYPES

    def __init__(self, settings: WebSearchSettings, request: Item) -> None:
        tools = request.get("tools") or []
        self._settings = settings
        self.max_turn_seconds = settings.max_turn_seconds
        self._options = options(tools, settings)
        self._name = function_name([t for t in tools if t.get("type") not in WEB_SEARCH_TYPES])
        include = request.get("include") or []
        self._sources = isinstance(include, list) and SOURCES in include
        self._offered = any(t.get("type") in WEB_SEARCH_TYPES for t in tools)
        self.results: list[Result] = []  # every result of the turn, numbered from 1

    async def check(self) -> None:
        return None  # the tool's options were checked when it was read

    async def open(self, turn: Turn, stack: AsyncExitStack) -> str | None:
        return None

    def functions(self) -> list[Item]:
        return [function(self._name, self._options)] if self._offered else []

    def owns(self, name: str) -> bool:
        return name == self._name

    def choice(self, tool_choice: object) -> object | None:
        if isinstance(tool_choice, dict) and tool_choice.get("type") in WEB_SEARCH_TYPES:
            return {"type": "function", "name": self._name} if self._offered else None
        return None

    def read_back(self, items: list[Item]) -> list[Item]:
        return read_back(items, self._name)

    def start(self, name: str) -> Call:
        return Call(call_item())

    def started(self, at: int, item: Item) -> list[Event]:
        return [progress("in_progress", at, item)]

    def relay(self, at: int, item: Item, event: Event) -> list[Event]:
        return []  # the call's own events: its item's come when it runs

    def settled(self, at: int, item: Item, arguments: str) -> list[Event]:
        return []

    async def run(self, at: int, item: Item, arguments: str, seconds: float, emit: Emit) -> str:
        query = query_of(arguments)
        if query is None:
            return self._failed(at, item, None, "the call gave no query", emit)
        if seconds <= 0:
            return self._failed(at, item, query, "the time for tools ran out", emit)
        item["status"] = "searching"
        emit(progress("searching", at, item))
        try:
            found = await search(self._settings, self._options.query(query), seconds)
        except SearchFailure as failure:
            return self._failed(at, item, query, failure.message, emit)
        except asyncio.CancelledError:
            item["status"] = "incomplete"
            raise
        first = len(self.results) + 1
        self.results += found
        searched(item, query, found, self._sources)
        item["status"] = "completed"
        emit(progress("completed", at, item), done(at, item))
        return results_text(query, found, first, self._options.snippet_chars)

    def _failed(self, at: int, item: Item, query: str | None, why: str, emit: Emit) -> str:
        searched(item, query, [], self._sources)
        item["status"] = "failed"
        emit(done(at, item))
        return failed_text(why)

    def annotations(self, text: str) -> list[Item]:
        return citations(text, self.results)
