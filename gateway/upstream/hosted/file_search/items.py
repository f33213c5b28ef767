"""``file_search_call`` items, their stream events (as OpenAI's SDK parses them:
``ResponseFileSearchToolCall``, ``response.file_search_call.*``), their citations, and how
they read back to a model on a later turn."""

from __future__ import annotations

import json
import re

from session import new_id
from session.files import Hit

from ...results import Event, Item

_MARKER = re.compile(r"\[(\d{1,4})\]")


def call_item() -> Item:
    return {"id": new_id("fs"), "type": "file_search_call", "status": "in_progress", "queries": []}


def progress(kind: str, index: int, item: Item) -> Event:
    """``response.file_search_call.in_progress``, ``.searching`` or ``.completed``."""
    return {
        "type": f"response.file_search_call.{kind}",
        "item_id": item["id"],
        "output_index": index,
    }


def citations(text: str, hits: list[Hit]) -> list[Item]:
    """The ``file_citation`` annotations of the ``[n]`` markers of ``text`` naming the n-th
    result of the turn's searches (numbered from 1)."""
    found: list[Item] = []
    for match in _MARKER.finditer(text):
        number = int(match.group(1))
        if 1 <= number <= len(hits):
            hit = hits[number - 1]
            found.append(
                {
                    "type": "file_citation",
                    "file_id": hit.file_id,
                    "filename": hit.filename,
                    "index": match.start(),
                }
            )
    return found


def read_back(items: list[Item], name: str) -> list[Item]:
    """``items`` with each ``file_search_call`` as a call of ``name`` and its output."""
    read: list[Item] = []
    for item in items:
        if item.get("type") != "file_search_call":
            read.append(item)
            continue
        queries = [q for q in item.get("queries") or [] if isinstance(q, str)]
        call_id = str(item.get("id") or "fs_call")
        results = [r for r in item.get("results") or [] if isinstance(r, dict)]
        if results:
            output = "\n\n".join(f"{r.get('filename')}: {r.get('text')}" for r in results)
        else:
            output = "Searched the files; the results were not kept."
        arguments = json.dumps({"query": queries[0] if queries else ""})
        read += [
            {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]
    return read
