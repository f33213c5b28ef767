"""Unfinished turns whose instance is gone, as operations.

Each gateway instance keeps one row in ``instances`` fresh; an unfinished turn names the
instance that runs it (``responses.instance_id``). A sweep fails the unfinished turns of
instances whose row went stale, then forgets those instances, in one transaction.
"""

from __future__ import annotations

import time
from typing import Any

from .dialect import Dialect
from .statement import Returning, run

_UNFINISHED = "status IN ('in_progress', 'queued')"


def _failed(dialect: Dialect) -> str:
    return (
        "UPDATE responses SET status = 'failed', completed_at = :now,"
        f" response = {dialect.json_replaced('response', 'error', ':error')}"
    )


def beat(instance_id: str, at: float) -> Returning[None]:
    yield run(
        "INSERT INTO instances (id, beat_at) VALUES (:id, :at)"
        " ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
        id=instance_id,
        at=at,
    )


def fail_orphaned(dialect: Dialect, alive_since: float, error: dict[str, Any]) -> Returning[int]:
    """Fail the unfinished turns of instances that last beat before ``alive_since``."""
    marked: int = yield run(
        f"{_failed(dialect)} WHERE {_UNFINISHED}"
        " AND instance_id IN (SELECT id FROM instances WHERE beat_at < :alive_since)",
        now=time.time(),
        error=dialect.json(error),
        alive_since=alive_since,
    )
    yield run("DELETE FROM instances WHERE beat_at < :alive_since", alive_since=alive_since)
    return marked


def fail_stale(dialect: Dialect, before: float, error: dict[str, Any]) -> Returning[int]:
    """Fail the unfinished turns created before ``before``, whatever instance runs them."""
    count: int = yield run(
        f"{_failed(dialect)} WHERE {_UNFINISHED} AND created_at < :before",
        now=time.time(),
        error=dialect.json(error),
        before=before,
    )
    return count
