"""``file_search`` as a kind of tool the gateway runs (:class:`gateway.upstream.hosted.Kind`):
the project's vector stores searched through the gateway's file services."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from session import SessionError
from session.files import Hit

from ....file_search_settings import FileSearchSettings
from ...errors import UpstreamError
from ...results import Event, Item
from ..events import done
from ..kind import Call, Emit, Turn
from ..search_tool import query_of
from .items import call_item, citations, progress, read_back
from .tool import (
    FILE_SEARCH_TYPES,
    RESULTS,
    Searcher,
    function,
    function_name,
    options,
    result_item,
    results_text,
)


class FileSearch:
    """The request's ``file_search`` tool, over the project's vector stores."""

    label = "file search"
    tool_types = FILE_SEARCH_TYPES

    def __init__(
        self, settings: FileSearchSettings, searcher: Searcher, project: str, request: Item
    ) -> None:
        tools = request.get("tools") or []
        self.max_turn_seconds = settings.max_turn_seconds
        self._searcher = searcher
        self._project = project
        self._options = options(tools, settings.max_num_results)
        self._name = function_name([t for t in tools if t.get("type") not in FILE_SEARCH_TYPES])
        include = request.get("include") or []
        self._results = isinstance(include, list) and RESULTS in include
        self.hits: list[Hit] = []  # every result of the turn, numbered from 1

    async def check(self) -> None:
        if self._options is not None:
            await self._searcher.check_stores(
                self._project, self._options.store_ids, self._options.param
            )

    async def open(self, turn: Turn, stack: AsyncExitStack) -> str | None:
        return None

    def functions(self) -> list[Item]:
        return [function(self._name)] if self._options is not None else []

    def owns(self, name: str) -> bool:
        return name == self._name

    def choice(self, tool_choice: object) -> object | None:
        if isinstance(tool_choice, dict) and tool_choice.get("type") in FILE_SEARCH_TYPES:
            return {"type": "function", "name": self._name} if self._options else None
        return None

    def read_back(self, items: list[Item]) -> list[Item]:
        return read_back(items, self._name)

    def start(self, name: str) -> Call:
        return Call(call_item())

    def started(self, at: int, item: Item) -> list[Event]:
        return [progress("in_progress", at, item)]

    def relay(self, at: int, item: Item, event: Event) -> list[Event]:
        return []

    def settled(self, at: int, item: Item, arguments: str) -> list[Event]:
        return []

    async def run(self, at: int, item: Item, arguments: str, seconds: float, emit: Emit) -> str:
        query = query_of(arguments)
        if query is None or self._options is None:
            return self._failed(at, item, "the call gave no query", emit)
        item["queries"] = [query]
        if seconds <= 0:
            return self._failed(at, item, "the time for tools ran out", emit)
        item["status"] = "searching"
        emit(progress("searching", at, item))
        try:
            async with asyncio.timeout(seconds):
                found = await self._searcher.search(
                    self._project, self._options.store_ids, query, self._options.search
                )
        except (UpstreamError, SessionError) as error:
            return self._failed(at, item, error.message, emit)
        except TimeoutError:
            return self._failed(at, item, "the time for tools ran out", emit)
        except asyncio.CancelledError:
            item["status"] = "incomplete"
            raise
        first = len(self.hits) + 1
        self.hits += found
        if self._results:
            item["results"] = [result_item(hit) for hit in found]
        item["status"] = "completed"
        emit(progress("completed", at, item), done(at, item))
        return results_text(query, found, first)

    def _failed(self, at: int, item: Item, why: str, emit: Emit) -> str:
        item["status"] = "failed"
        emit(done(at, item))
        return f"The file search failed ({why}). Answer without it, and say that it failed."

    def annotations(self, text: str) -> list[Item]:
        return citations(text, self.hits)
