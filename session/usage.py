"""What the store can tell an operator: records pruned, tokens used."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .models import StoredResponse


@dataclass(frozen=True)
class Pruned:
    """How many records one pruning pass deleted."""

    responses: int = 0
    conversations: int = 0

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(self.responses + other.responses, self.conversations + other.conversations)

    def __bool__(self) -> bool:
        return bool(self.responses or self.conversations)


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


def usage_row(project: str, model: str, *counts: float | None) -> UsageRow:
    """A row from the columns ``responses, input, output, cached, reasoning`` (NULL → 0)."""
    numbers = [int(value or 0) for value in counts]
    return UsageRow(project, model, *numbers)


def usage_of(records: Iterable[StoredResponse]) -> list[UsageRow]:
    """Totals by project and model, for a store that holds its records in memory."""
    totals: dict[tuple[str, str], list[int]] = {}
    for record in records:
        usage = record.response.usage or {}
        counts = totals.setdefault((record.project, record.request.model), [0] * 5)
        counts[0] += 1
        counts[1] += usage.get("input_tokens") or 0
        counts[2] += usage.get("output_tokens") or 0
        counts[3] += (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
        counts[4] += (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return [
        usage_row(project, model, *counts) for (project, model), counts in sorted(totals.items())
    ]
