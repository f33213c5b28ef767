"""Instance heartbeats in SQL: each statement written once for SQLite and PostgreSQL.

Each gateway instance keeps one row in ``instances`` fresh; an unfinished turn names the
instance that runs it (``responses.instance_id``). A sweep fails the unfinished turns of
instances whose row went stale, then forgets those instances, in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeartbeatSQL:
    """The heartbeat statements for one database's placeholder and JSON functions."""

    beat: str
    fail_orphaned: str
    forget: str

    @classmethod
    def of(cls, *, postgres: bool) -> HeartbeatSQL:
        mark = "%s" if postgres else "?"
        with_error = (
            f"jsonb_set(response, '{{error}}', {mark})"
            if postgres
            else f"json_set(response, '$.error', json({mark}))"
        )
        return cls(
            beat=f"INSERT INTO instances (id, beat_at) VALUES ({mark}, {mark})"
            " ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
            # Parameters: the time marked, the error, the time before which a beat is stale.
            fail_orphaned=f"UPDATE responses SET status = 'failed', completed_at = {mark},"
            f" response = {with_error}"
            " WHERE status IN ('in_progress', 'queued')"
            f" AND instance_id IN (SELECT id FROM instances WHERE beat_at < {mark})",
            forget=f"DELETE FROM instances WHERE beat_at < {mark}",
        )


SQLITE = HeartbeatSQL.of(postgres=False)
POSTGRES = HeartbeatSQL.of(postgres=True)
