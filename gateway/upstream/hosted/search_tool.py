"""What the gateway's search tools (web search, file search) offer the model: one function
that takes a query, and the query read back from a call's arguments."""

from __future__ import annotations

import json

from ..results import Item


def query_function(name: str, description: str) -> Item:
    """The function ``name`` the model calls with what to search for."""
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def query_of(arguments: str) -> str | None:
    """The query the model's arguments hold, if they hold one."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return None
    query = parsed.get("query") if isinstance(parsed, dict) else None
    return query.strip() if isinstance(query, str) and query.strip() else None
