"""Stored turns -> the response objects clients receive."""

from __future__ import annotations

from typing import Any

from session import StoredResponse

from ..upstream.results import complete_usage


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as OpenAI echoes it: function tools with every field, ``strict`` defaulting on."""
    if tool.get("type") != "function":
        return tool
    return {
        "type": "function",
        "name": tool.get("name"),
        "description": tool.get("description"),
        "parameters": tool.get("parameters"),
        "strict": tool.get("strict", True),
        **{k: v for k, v in tool.items() if k not in _FUNCTION_FIELDS},
    }


_FUNCTION_FIELDS = frozenset({"type", "name", "description", "parameters", "strict"})


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value


def response_object(record: StoredResponse, *, store: bool = True) -> dict[str, Any]:
    """The full OpenAI ``response`` object for ``record``, as strict clients parse it.

    Every field OpenAI returns is present, with OpenAI's value when the request left it
    unset; request values come back as they were sent.
    """
    request, response = record.request, record.response
    body: dict[str, Any] = {
        "id": record.id,
        "object": "response",
        "created_at": int(record.created_at),
        "completed_at": int(record.completed_at) if record.completed_at else None,
        "status": record.status,
        "background": request.background,
        "model": request.model,
        "output": response.output,
        "error": response.error,
        "incomplete_details": response.incomplete_details,
        "instructions": request.instructions,
        "metadata": request.metadata or {},
        "parallel_tool_calls": request.parallel_tool_calls,
        "tool_choice": request.tool_choice,
        "tools": [_tool(tool) for tool in request.tools],
        "temperature": _default(request.temperature, 1.0),
        "top_p": _default(request.top_p, 1.0),
        "presence_penalty": _default(request.presence_penalty, 0.0),
        "frequency_penalty": _default(request.frequency_penalty, 0.0),
        "top_logprobs": _default(request.top_logprobs, 0),
        "max_output_tokens": request.max_output_tokens,
        "max_tool_calls": request.max_tool_calls,
        "previous_response_id": record.previous_response_id,
        "reasoning": request.reasoning or {"effort": None, "summary": None},
        "service_tier": _service_tier(record),
        "store": store,
        "text": {"format": {"type": "text"}, "verbosity": "medium", **(request.text or {})},
        "truncation": request.truncation or "disabled",
        "usage": complete_usage(response.usage),
        "user": record.metadata.get("user"),
        "safety_identifier": request.safety_identifier,
        "prompt_cache_key": request.prompt_cache_key,
        "prompt_cache_retention": request.prompt_cache_retention,
        "conversation": {"id": record.conversation_id} if record.conversation_id else None,
        **_UNUSED_FEATURES,
    }
    return body


# Fields of OpenAI's response object for features no upstream here reports: present, null.
_UNUSED_FEATURES: dict[str, Any] = dict.fromkeys(
    (
        "access_programs",
        "image",
        "input_transformations",
        "moderation",
        "prompt",
        "prompt_cache_diagnostics",
        "prompt_cache_options",
        "tool_usage",
    )
)


_TIERS = frozenset({"default", "flex", "scale", "priority", "fast", "ultrafast"})


def _service_tier(record: StoredResponse) -> str:
    """The tier that served the turn, as its upstream said; else the one asked for."""
    used = record.metadata.get("service_tier")
    if used in _TIERS:
        return str(used)
    asked = record.request.service_tier
    return "default" if asked in (None, "auto") else str(asked)
