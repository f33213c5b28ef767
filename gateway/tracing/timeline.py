"""A turn's timeline: its steps (resolving the history, each upstream attempt with its
first token, each tool call, compaction, the saves) with their times, kept with the
stored turn for the console's waterfall whether or not traces are exported.

The turn being run holds its :class:`Timeline` in a context variable, so that each step,
however deep, adds itself; outside a turn (a count of input tokens) steps are not kept.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any

MAX_STEPS = 200  # a turn of many tool calls keeps its first steps, not all

Step = dict[str, Any]


class Timeline:
    """The steps of one turn, each ``{"kind", "name", "start", "end", ...}`` in epoch
    seconds (``end`` ``None`` while it runs)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def stored(self) -> list[Step]:
        """The steps as the turn stores them: times to the tenth of a millisecond."""
        return [
            {
                **step,
                **{
                    key: round(step[key], 4)
                    for key in ("start", "end", "first_token")
                    if isinstance(step.get(key), float)
                },
            }
            for step in self.steps
        ]


CURRENT_TIMELINE: ContextVar[Timeline | None] = ContextVar("gateway_timeline", default=None)


def begin(kind: str, name: str, **detail: Any) -> Step | None:
    """Start a step of the current turn's timeline (``None`` outside a turn, or past
    :data:`MAX_STEPS`)."""
    timeline = CURRENT_TIMELINE.get()
    if timeline is None or len(timeline.steps) >= MAX_STEPS:
        return None
    step: Step = {"kind": kind, "name": name, "start": time.time(), "end": None, **detail}
    timeline.steps.append(step)
    return step


def finish(step: Step | None, **detail: Any) -> None:
    """End ``step`` now (once), with what it came to."""
    if step is not None and step["end"] is None:
        step["end"] = time.time()
        step.update(detail)
