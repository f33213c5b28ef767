"""What the store can tell an operator: records pruned, tokens used."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .models import StoredResponse


@dataclass(frozen=True)
class Pruned:
    """How many records one pruning pass deleted (``usage``: entries of the usage ledger
    and figures of unstored turns)."""

    responses: int = 0
    conversations: int = 0
    usage: int = 0

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(
            self.responses + other.responses,
            self.conversations + other.conversations,
            self.usage + other.usage,
        )

    def __bool__(self) -> bool:
        return bool(self.responses or self.conversations or self.usage)


@dataclass(frozen=True)
class UsageRow:
    """Token totals of one project's stored responses to one model."""

    project: str
    model: str
    responses: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost_usd: float = 0.0  # of the turns to priced models (``models.NAME.pricing``)
    key: str = "-"  # the API key that made the turns (``-``: none, or not recorded)


def usage_row(
    project: str,
    model: str,
    *counts: float | None,
    cost: float | None = 0.0,
    key: str | None = None,
) -> UsageRow:
    """A row from the columns ``responses, input, output, cached, reasoning`` (NULL → 0),
    the turns' cost and their key."""
    responses, input_tokens, output_tokens, cached, reasoning = (int(c or 0) for c in counts)
    spent = round(float(cost or 0.0), 9)
    return UsageRow(
        project,
        model,
        responses,
        input_tokens,
        output_tokens,
        cached,
        reasoning,
        spent,
        key or "-",
    )


def token_counts(usage: dict[str, Any] | None) -> tuple[int, int, int, int]:
    """Input, output, cached and reasoning tokens of a Responses ``usage`` object."""
    if not usage:
        return (0, 0, 0, 0)
    return (
        _count(usage.get("input_tokens")),
        _count(usage.get("output_tokens")),
        _count((usage.get("input_tokens_details") or {}).get("cached_tokens")),
        _count((usage.get("output_tokens_details") or {}).get("reasoning_tokens")),
    )


def _count(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


@dataclass(frozen=True)
class UsageRecord:
    """The tokens of an upstream call that no stored turn holds: a compaction's summary."""

    project: str
    model: str
    created_at: float
    tokens: tuple[int, int, int, int]  # input, output, cached, reasoning


@dataclass(frozen=True)
class UnstoredTurn:
    """The figures of a turn sent with ``store: false``, kept so that usage and cost count
    it: when, whose, which model and where it went, how it ended, its tokens and cost.
    Nothing the turn said (input, output, instructions, metadata) is kept."""

    project: str
    model: str
    created_at: float
    completed_at: float | None
    key_id: str | None
    provider: str  # the provider the model routes to
    deployment: str | None  # the deployment that answered (routing's ``answered_by``)
    status: str
    tokens: tuple[int, int, int, int]  # input, output, cached, reasoning
    cost_usd: float | None = None
    cost_source: str | None = None  # where the price came from: ``config``, ``genai-prices``
    time_to_first_token: float | None = None  # seconds

    @classmethod
    def of(cls, record: StoredResponse, provider: str) -> UnstoredTurn:
        """The figures of a finished turn that is not stored."""
        meta = record.metadata
        route = meta.get("route")
        answered = route.get("answered_by") if isinstance(route, dict) else None
        return cls(
            record.project,
            record.request.model,
            record.created_at,
            record.completed_at,
            _text(meta.get("key_id")),
            provider,
            _text(answered),
            record.status,
            token_counts(record.response.usage),
            _number(meta.get("cost_usd")),
            _text(meta.get("cost_source")),
            _number(meta.get("time_to_first_token_seconds")),
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_of(
    records: Iterable[StoredResponse],
    kept: Iterable[UsageRecord] = (),
    unstored: Iterable[UnstoredTurn] = (),
) -> list[UsageRow]:
    """Totals by project, model and key, for a store that holds its records in memory."""
    totals: dict[tuple[str, str, str], list[int]] = {}
    costs: dict[tuple[str, str, str], float] = {}
    for record in records:
        key_id = record.metadata.get("key_id")
        key = (record.project, record.request.model, key_id if isinstance(key_id, str) else "-")
        counts = totals.setdefault(key, [0] * 5)
        counts[0] += 1
        for index, count in enumerate(token_counts(record.response.usage), start=1):
            counts[index] += count
        cost = record.metadata.get("cost_usd")
        costs[key] = costs.get(key, 0.0) + (cost if isinstance(cost, int | float) else 0.0)
    for figures in unstored:
        key = (figures.project, figures.model, figures.key_id or "-")
        counts = totals.setdefault(key, [0] * 5)
        counts[0] += 1
        for index, count in enumerate(figures.tokens, start=1):
            counts[index] += count
        costs[key] = costs.get(key, 0.0) + (figures.cost_usd or 0.0)
    for entry in kept:
        counts = totals.setdefault((entry.project, entry.model, "-"), [0] * 5)
        for index, count in enumerate(entry.tokens, start=1):
            counts[index] += count
    return [
        usage_row(project, model, *counts, cost=costs.get((project, model, key)), key=key)
        for (project, model, key), counts in sorted(totals.items())
    ]
