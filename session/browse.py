"""Looking into stored turns: filters for recent turns, chains a page at a time, and usage
totals in time buckets.

What every backend shares: the query and sample types, and the pure functions that filter
and total records held in memory. The SQL backends run the same filters as statements
(:mod:`session.sql.browse`) and total their samples with :func:`usage_series`, so every
backend reports the same figures as :meth:`Usage.usage` for the same range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .models import StoredResponse
from .usage import UnstoredTurn, token_counts

GroupBy = Literal["project", "model", "key"]


@dataclass(frozen=True)
class TurnQuery:
    """Which stored turns to list, newest first; ``None`` filters nothing.

    ``before`` is the ``(created_at, id)`` of the last turn of the previous page.
    """

    project: str | None = None
    model: str | None = None
    status: str | None = None
    key_id: str | None = None
    request_id: str | None = None
    since: float | None = None
    until: float | None = None
    before: tuple[float, str] | None = None

    def matches(self, record: StoredResponse) -> bool:
        """Whether ``record`` passes every filter (the memory store's way)."""
        meta = record.metadata
        checks = (
            (self.project, record.project),
            (self.model, record.request.model),
            (self.status, record.status),
            (self.key_id, meta.get("key_id")),
            (self.request_id, meta.get("request_id")),
        )
        if any(wanted is not None and wanted != found for wanted, found in checks):
            return False
        if self.since is not None and record.created_at < self.since:
            return False
        if self.until is not None and record.created_at >= self.until:
            return False
        return self.before is None or (record.created_at, record.id) < self.before


def newest_first(
    records: Iterable[StoredResponse], query: TurnQuery, limit: int
) -> list[StoredResponse]:
    """Up to ``limit`` of ``records`` that pass ``query``, newest first (ties: id descending)."""
    found = [record for record in records if query.matches(record)]
    found.sort(key=lambda record: (record.created_at, record.id), reverse=True)
    return found[:limit]


@dataclass(frozen=True)
class UsageSample:
    """What usage totals read of one stored turn, or of one call kept in the usage ledger
    (``turn`` false: it counts tokens, not requests)."""

    created_at: float
    project: str
    model: str
    key_id: str | None
    status: str | None
    latency: float | None  # completed_at - created_at, in seconds
    tokens: tuple[int, int, int, int]  # input, output, cached, reasoning
    cost_usd: float
    turn: bool = True


def sample_of(record: StoredResponse) -> UsageSample:
    """The usage sample of one stored turn."""
    cost = record.metadata.get("cost_usd")
    key_id = record.metadata.get("key_id")
    latency = None
    if record.completed_at is not None:
        latency = max(0.0, record.completed_at - record.created_at)
    return UsageSample(
        record.created_at,
        record.project,
        record.request.model,
        key_id if isinstance(key_id, str) else None,
        record.status,
        latency,
        token_counts(record.response.usage),
        float(cost) if isinstance(cost, int | float) else 0.0,
    )


def unstored_sample(figures: UnstoredTurn) -> UsageSample:
    """The usage sample of one turn that was not stored (from its kept figures)."""
    latency = None
    if figures.completed_at is not None:
        latency = max(0.0, figures.completed_at - figures.created_at)
    return UsageSample(
        figures.created_at,
        figures.project,
        figures.model,
        figures.key_id,
        figures.status,
        latency,
        figures.tokens,
        figures.cost_usd or 0.0,
    )


@dataclass
class UsageTotals:
    """Totals of a set of samples: what a bucket or a group shows."""

    requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def add(self, sample: UsageSample) -> None:
        if sample.turn:
            self.requests += 1
            self.errors += sample.status == "failed"
            if sample.latency is not None:
                self.latencies.append(sample.latency)
        input_tokens, output_tokens, cached, reasoning = sample.tokens
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cached_tokens += cached
        self.reasoning_tokens += reasoning
        self.cost_usd += sample.cost_usd

    def to_json(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "requests": self.requests,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "uncached_input_tokens": self.input_tokens - self.cached_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cost_usd": round(self.cost_usd, 9),
            "latency_p50": percentile(ordered, 0.50),
            "latency_p90": percentile(ordered, 0.90),
            "latency_p99": percentile(ordered, 0.99),
        }


def percentile(ordered: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of sorted values (``None`` for none)."""
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1], 6)


def group_of(sample: UsageSample, by: GroupBy) -> str:
    if by == "project":
        return sample.project
    if by == "model":
        return sample.model
    return sample.key_id or "-"


def usage_series(
    samples: Iterable[UsageSample], *, since: float, until: float, bucket: float, by: GroupBy
) -> dict[str, Any]:
    """Totals per time bucket (``bucket`` seconds from ``since``), per group and overall, of
    the samples created in ``[since, until)``."""
    count = max(1, math.ceil((until - since) / bucket))
    buckets = [UsageTotals() for _ in range(count)]
    groups: dict[str, UsageTotals] = {}
    overall = UsageTotals()
    for sample in samples:
        if not since <= sample.created_at < until:
            continue
        index = min(count - 1, int((sample.created_at - since) // bucket))
        buckets[index].add(sample)
        groups.setdefault(group_of(sample, by), UsageTotals()).add(sample)
        overall.add(sample)
    return {
        "since": since,
        "until": until,
        "bucket_seconds": bucket,
        "group_by": by,
        "buckets": [
            {"start": since + n * bucket, **totals.to_json()} for n, totals in enumerate(buckets)
        ],
        "groups": [{"group": name, **groups[name].to_json()} for name in sorted(groups)],
        "totals": overall.to_json(),
    }
