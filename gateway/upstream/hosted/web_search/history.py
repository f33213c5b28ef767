"""``web_search_call`` items in a turn's input, as a model without web search reads them.

Each becomes a call of the search function and its output: the query, and the sources when
the item kept them (``include: ["web_search_call.action.sources"]``), numbered as they were
when the model read them, so that the ``[n]`` markers of the answer after still name them.
Numbers run on over the calls since the last user message, as a turn's searches do.
"""

from __future__ import annotations

import json

from ...results import Item

WEB_SEARCH_ITEMS = frozenset({"web_search_call"})


def holds_web_search(items: list[Item]) -> bool:
    return any(item.get("type") in WEB_SEARCH_ITEMS for item in items)


def _action(item: Item) -> Item:
    action = item.get("action")
    return action if isinstance(action, dict) else {}


def _output(item: Item, first: int) -> tuple[str, int]:
    action = _action(item)
    query = action.get("query")
    shown = json.dumps(query) if isinstance(query, str) else "the query"
    if item.get("status") == "failed":
        return f"The web search for {shown} failed.", 0
    sources = [s.get("url") for s in action.get("sources") or [] if isinstance(s, dict)]
    sources = [url for url in sources if isinstance(url, str)]
    if not sources:
        return f"Searched the web for {shown}; the results were not kept.", 0
    lines = [f"Web search results for {shown} (their addresses alone were kept):"]
    lines += [f"[{n}] {url}" for n, url in enumerate(sources, start=first)]
    return "\n".join(lines), len(sources)


def read_back(items: list[Item], name: str) -> list[Item]:
    """``items`` with each ``web_search_call`` as a call of ``name`` and its output."""
    read: list[Item] = []
    number = 1
    for item in items:
        if item.get("type") == "message" and item.get("role") == "user":
            number = 1
        if item.get("type") not in WEB_SEARCH_ITEMS:
            read.append(item)
            continue
        query = _action(item).get("query")
        arguments = json.dumps({"query": query if isinstance(query, str) else ""})
        call_id = str(item.get("id") or "ws_call")
        output, count = _output(item, number)
        number += count
        read += [
            {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]
    return read
