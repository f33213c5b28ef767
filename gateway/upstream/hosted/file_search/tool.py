"""A request's ``file_search`` tool as the gateway runs it: its options, the function the
model is offered in its place, and the results as the model reads them.

The model cites a result by its number in square brackets (``[2]``); numbers run on over
the searches of a turn, and the gateway turns them into ``file_citation`` annotations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from session.files import Hit

from ....errors import invalid_request
from ....retrieval.search import SearchOptions, options_of
from ...results import Item
from ..search_tool import query_function

FILE_SEARCH_TYPES = frozenset({"file_search"})
FUNCTION = "file_search"
RESULTS = "file_search_call.results"
CITE = "Cite a result you use by its number in square brackets, e.g. [1]."


class Searcher(Protocol):
    """Searches a project's vector stores (the gateway's file services)."""

    async def check_stores(self, project: str, store_ids: list[str], param: str) -> None:
        """A 400 naming a store the project does not have."""

    async def search(
        self, project: str, store_ids: list[str], query: str, options: SearchOptions
    ) -> list[Hit]: ...


def has_file_search(tools: Any) -> bool:
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and tool.get("type") in FILE_SEARCH_TYPES for tool in tools
    )


def function_name(tools: list[Item]) -> str:
    """``file_search``, unless the client has a function of that name."""
    taken = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    name, number = FUNCTION, 2
    while name in taken:
        name, number = f"{FUNCTION}_{number}", number + 1
    return name


@dataclass(frozen=True)
class Options:
    store_ids: list[str]
    search: SearchOptions
    param: str


def options(tools: list[Item], default_limit: int) -> Options | None:
    """The options of the request's first ``file_search`` tool; a 400 naming a bad field."""
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") not in FILE_SEARCH_TYPES:
            continue
        param = f"tools[{index}]"
        ids = tool.get("vector_store_ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
            raise invalid_request(
                f"Invalid '{param}.vector_store_ids': expected a non-empty array of ids.",
                param=f"{param}.vector_store_ids",
            )
        search = options_of(
            tool.get("max_num_results"),
            tool.get("filters"),
            tool.get("ranking_options"),
            default_limit,
            f"{param}.",
        )
        return Options(list(dict.fromkeys(ids)), search, f"{param}.vector_store_ids")
    return None


def function(name: str) -> Item:
    """The function the model calls to search the files."""
    return query_function(
        name,
        "Search the user's uploaded files. Returns numbered passages, each with its file "
        "name. " + CITE,
    )


def results_text(query: str, hits: list[Hit], first: int) -> str:
    if not hits:
        return f"The file search for {json.dumps(query)} found nothing."
    lines = [f"File search results for {json.dumps(query)}:"]
    for number, hit in enumerate(hits, start=first):
        lines += ["", f"[{number}] {hit.filename}", hit.text]
    return "\n".join([*lines, "", CITE])


def result_item(hit: Hit) -> Item:
    """A result as ``ResponseFileSearchToolCall.results`` holds it."""
    return {
        "file_id": hit.file_id,
        "filename": hit.filename,
        "score": round(hit.score, 6),
        "text": hit.text,
        "attributes": hit.attributes,
    }
