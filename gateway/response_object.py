"""Stored turns -> the response objects clients receive."""

from __future__ import annotations

from typing import Any

from session import StoredResponse

from .upstream.results import complete_usage


def response_object(record: StoredResponse, *, store: bool = True) -> dict[str, Any]:
    """The full OpenAI ``response`` object for ``record``, as strict clients parse it."""
    request, response = record.request, record.response
    body: dict[str, Any] = {
        "id": record.id,
        "object": "response",
        "created_at": int(record.created_at),
        "completed_at": int(record.completed_at) if record.completed_at else None,
        "status": record.status,
        "background": False,
        "model": request.model,
        "output": response.output,
        "error": response.error,
        "incomplete_details": response.incomplete_details,
        "instructions": request.instructions,
        "metadata": request.metadata or {},
        "parallel_tool_calls": request.parallel_tool_calls,
        "tool_choice": request.tool_choice,
        "tools": request.tools,
        "temperature": request.temperature if request.temperature is not None else 1.0,
        "top_p": request.top_p if request.top_p is not None else 1.0,
        "max_output_tokens": request.max_output_tokens,
        "previous_response_id": record.previous_response_id,
        "reasoning": request.reasoning or {"effort": None, "summary": None},
        "store": store,
        "text": request.text or {"format": {"type": "text"}},
        "truncation": request.truncation or "disabled",
        "usage": complete_usage(response.usage),
        "user": record.metadata.get("user"),
    }
    if record.conversation_id:
        body["conversation"] = {"id": record.conversation_id}
    return body
