"""What upstream adapters produce: Responses stream events, then one :class:`TurnResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from session import Item as Item  # the one JSON object type, from the store below

Event = dict[str, Any]
"""A Responses stream event without ``sequence_number`` (the pipeline numbers them)."""

TurnStatus = Literal["completed", "incomplete", "failed"]


@dataclass
class TurnResult:
    """The outcome of one upstream call, in Responses terms."""

    status: TurnStatus
    output: list[Item] = field(default_factory=list)
    usage: Item | None = None
    incomplete_details: Item | None = None
    error: Item | None = None
    route: Item | None = None  # which deployment answered, and every attempt (routing)
    cost_usd: float | None = None  # what the usage cost, where the model is priced
    cost_source: str | None = None  # where its price came from: "config", "genai-prices"
    first_token_at: float | None = None  # when the first output arrived (``time.time()``)
    service_tier: str | None = None  # the tier the upstream says served the request

    @property
    def output_text(self) -> str:
        return "".join(
            part.get("text", "")
            for item in self.output
            if item.get("type") == "message"
            for part in item.get("content", [])
            if part.get("type") == "output_text"
        )


def failed_result(message: str, output: list[Item] | None = None) -> TurnResult:
    """A failed turn; ``server_error`` is the code strict clients accept for it."""
    error = {"code": "server_error", "message": message}
    return TurnResult(status="failed", output=output or [], error=error)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def usage_from_chat(usage: Item | None) -> Item | None:
    """Chat Completions usage -> Responses usage (cached and reasoning tokens included)."""
    if not usage:
        return None
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    cached = prompt_details.get("cached_tokens", usage.get("prompt_cache_hit_tokens"))
    return complete_usage(
        {
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "total_tokens": usage.get("total_tokens"),
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {
                "reasoning_tokens": completion_details.get("reasoning_tokens")
            },
        }
    )


def complete_usage(usage: Item | None) -> Item | None:
    """Fill every field a strict client requires of a Responses ``usage`` object."""
    if usage is None:
        return None
    input_details = dict(usage.get("input_tokens_details") or {})
    output_details = dict(usage.get("output_tokens_details") or {})
    input_tokens, output_tokens = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    input_details["cached_tokens"] = _int(input_details.get("cached_tokens"))
    input_details["cache_write_tokens"] = _int(input_details.get("cache_write_tokens"))
    output_details["reasoning_tokens"] = _int(output_details.get("reasoning_tokens"))
    return {
        **usage,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": _int(usage.get("total_tokens")) or input_tokens + output_tokens,
        "input_tokens_details": input_details,
        "output_tokens_details": output_details,
    }


def _add_counts(a: Any, b: Any) -> int:
    return (a if isinstance(a, int) else 0) + (b if isinstance(b, int) else 0)


def summed_usage(total: Item | None, more: Item | None) -> Item | None:
    """The usage of two model calls of one turn, added up."""
    if more is None:
        return total
    if total is None:
        return complete_usage(more)
    total, more = complete_usage(total) or {}, complete_usage(more) or {}
    summed: Item = {
        key: _add_counts(total.get(key), more.get(key))
        for key in ("input_tokens", "output_tokens", "total_tokens")
    }
    for details in ("input_tokens_details", "output_tokens_details"):
        first, second = total.get(details) or {}, more.get(details) or {}
        summed[details] = {k: _add_counts(first.get(k), second.get(k)) for k in {*first, *second}}
    return summed
