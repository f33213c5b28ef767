"""When a provider says it will take a call again: Retry-After and the quota reset headers."""

from __future__ import annotations

import pytest

from gateway.upstream.transport.rate_limits import duration_seconds, retry_after

pytestmark = [pytest.mark.unit]

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.mark.parametrize(
    ("headers", "status", "expected"),
    [
        ({"retry-after": "7"}, 429, "7"),
        ({"retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"}, 503, "30"),
        ({"retry-after": "soon"}, 429, None),
        ({"retry-after-ms": "1500"}, 429, "2"),
        ({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "20ms"}, 429, "360"),
        ({"anthropic-ratelimit-requests-reset": "2027-01-15T08:01:00Z"}, 429, "60"),
        ({"x-ratelimit-reset-requests": "1s"}, 500, None),  # a quota speaks of 429s only
        ({}, 429, None),
    ],
)
def test_the_wait_a_provider_names(
    headers: dict[str, str], status: int, expected: str | None
) -> None:
    assert retry_after(headers, status, NOW) == expected


def test_durations_as_openai_writes_them() -> None:
    assert duration_seconds("1m30.5s") == 90.5
    assert duration_seconds("250ms") == 0.25
    assert duration_seconds("2h") == 7200
    assert duration_seconds("soon") is None and duration_seconds("") is None
