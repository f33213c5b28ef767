"""A streamed response's events, kept for clients that resume, as operations."""

from __future__ import annotations

import time

from .statement import Returning, rows, run, run_many


def append_events(project: str, response_id: str, events: list[tuple[int, str]]) -> Returning[None]:
    now = time.time()
    yield run_many(
        "INSERT INTO response_events (project, response_id, seq, event, created_at)"
        " VALUES (:project, :response_id, :seq, :event, :now) ON CONFLICT DO NOTHING",
        [
            {"project": project, "response_id": response_id, "seq": seq, "event": event, "now": now}
            for seq, event in events
        ],
    )


def events_after(
    project: str, response_id: str, after: int, limit: int
) -> Returning[list[tuple[int, str]]]:
    found = yield rows(
        "SELECT seq, event FROM response_events WHERE project = :project"
        " AND response_id = :response_id AND seq > :after ORDER BY seq LIMIT :limit",
        project=project,
        response_id=response_id,
        after=after,
        limit=limit,
    )
    return [(int(seq), event) for seq, event in found]


def prune_events(before: float) -> Returning[int]:
    """Drop the events kept before ``before`` of responses that have finished."""
    count: int = yield run(
        "DELETE FROM response_events WHERE created_at < :before AND NOT EXISTS ("
        " SELECT 1 FROM responses r WHERE r.project = response_events.project"
        " AND r.id = response_events.response_id AND r.status IN ('queued', 'in_progress'))",
        before=before,
    )
    return count
