"""When a provider that refused a call will take one again, read off its answer's headers.

``Retry-After`` (seconds or an HTTP date) first; then ``retry-after-ms``; then, for a 429,
the quota reset times providers send: OpenAI's ``x-ratelimit-reset-requests`` and
``-tokens`` (durations such as ``1s``, ``6m0s``, ``20ms``) and Anthropic's
``anthropic-ratelimit-requests-reset`` and ``-tokens-reset`` (RFC 3339 times). The wait is
given back as whole seconds in text, as ``Retry-After`` would give it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
OPENAI_RESETS = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
ANTHROPIC_RESETS = ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset")


def _seconds(wait: float) -> str:
    return str(max(0, math.ceil(wait)))


def duration_seconds(text: str) -> float | None:
    """``6m0s`` → 360.0; None unless the whole text is such a duration."""
    text = text.strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def _until(text: str, now: float) -> float | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() - now if moment.tzinfo is not None else None


def retry_after(headers: Mapping[str, str], status: int, now: float) -> str | None:
    """The seconds to wait before calling again, if the answer says; else None."""
    given = headers.get("retry-after")
    if given:
        if given.strip().isdigit():
            return given.strip()
        try:
            return _seconds(parsedate_to_datetime(given).timestamp() - now)
        except (TypeError, ValueError):
            pass
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return _seconds(float(millis) / 1000)
        except ValueError:
            pass
    if status != 429:
        return None
    waits = [w for name in OPENAI_RESETS if (w := duration_seconds(headers.get(name, "")))]
    waits += [w for name in ANTHROPIC_RESETS if (w := _until(headers.get(name, ""), now))]
    return _seconds(max(waits)) if waits else None
