"""Stored records as the console's JSON shows them: a turn whole or in summary, a
conversation, a managed key (never its secret's hash).

Stored content passes through as data; the page renders every string as text.
"""

from __future__ import annotations

from typing import Any

from session import ApiKey, Conversation, StoredResponse, token_counts

PREVIEW_CHARS = 160


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def preview(record: StoredResponse) -> str:
    """The turn's last user message, shortened, to tell turns apart in a list."""
    for item in reversed(record.request.input):
        if item.get("type") == "message" and item.get("role") == "user":
            text = " ".join(_text_of(item).split())
            return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def timing(record: StoredResponse) -> dict[str, Any]:
    """Latency, and time to first token where the turn kept it."""
    latency = None
    if record.completed_at is not None:
        latency = round(max(0.0, record.completed_at - record.created_at), 6)
    first_token = _number(record.metadata.get("time_to_first_token_seconds"))
    return {"latency_seconds": latency, "time_to_first_token_seconds": first_token}


def usage_of(record: StoredResponse) -> dict[str, int]:
    input_tokens, output_tokens, cached, reasoning = token_counts(record.response.usage)
    return {
        "input_tokens": input_tokens,
        "cached_tokens": cached,
        "output_tokens": output_tokens,
        "reasoning_tokens": reasoning,
    }


def summary(record: StoredResponse) -> dict[str, Any]:
    """One line of the list of turns."""
    meta = record.metadata
    return {
        "id": record.id,
        "object": "console.turn",
        "project": record.project,
        "created_at": record.created_at,
        "status": record.status,
        "model": record.request.model,
        "previous_response_id": record.previous_response_id,
        "conversation_id": record.conversation_id,
        "request_id": _text(meta.get("request_id")),
        "key_id": _text(meta.get("key_id")),
        "edge": _text(meta.get("edge")) or "responses",
        "cost_usd": _number(meta.get("cost_usd")),
        "usage": usage_of(record),
        "preview": preview(record),
        **timing(record),
    }


def turn(record: StoredResponse, children: list[StoredResponse] | None = None) -> dict[str, Any]:
    """A turn whole, as a person reads it, with the turns that continue it."""
    request, response, meta = record.request, record.response, record.metadata
    return {
        **summary(record),
        "completed_at": record.completed_at,
        "instructions": request.instructions,
        "input": request.input,
        "output": response.output,
        "tools": [tool.get("name") or tool.get("type") for tool in request.tools],
        "reasoning": request.reasoning,
        "error": response.error,
        "incomplete_details": response.incomplete_details,
        "route": meta.get("route") if isinstance(meta.get("route"), dict) else None,
        "timeline": record.timeline,
        "user": _text(meta.get("user")),
        "children": [] if children is None else [summary(child) for child in children],
    }


def conversation(found: Conversation) -> dict[str, Any]:
    return {
        "id": found.id,
        "object": "conversation",
        "project": found.project,
        "created_at": found.created_at,
        "metadata": found.metadata,
    }


def key(found: ApiKey) -> dict[str, Any]:
    """A managed key without its secret's hash."""
    return {
        "id": found.id,
        "object": "console.key",
        "name": found.name,
        "project": found.project,
        "created_at": found.created_at,
        "revoked_at": found.revoked_at,
        "requests_per_minute": found.requests_per_minute,
        "budget_usd": found.budget_usd,
        "budget_tokens": found.budget_tokens,
    }
