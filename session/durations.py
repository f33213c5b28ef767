"""Durations written as ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object) -> float:
    """Seconds in ``value`` (a duration string, or a number of seconds); ValueError if not."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _SECONDS[match.group(2)]
    else:
        raise ValueError(f"expected a duration such as 30d, 12h, 90m or 45s, got {value!r}")
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return seconds
