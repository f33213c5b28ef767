"""LangGraph checkpoints, their pending writes, and long-term memory items, as operations.

Serialised values arrive already encoded by LangGraph's serializer (``[type, base64]``) and
are stored as given; only checkpoint metadata is read here, as plain JSON, to filter lists.
Checkpoint ids sort bytewise (a binary collation on PostgreSQL).
"""

from __future__ import annotations

import json
from typing import Any

from ..sql import Operation, rows, run
from .errors import bad_request
from .values import BIGINT_MAX, BIGINT_MIN, check_key, json_text

THREAD = "project = :project AND namespace = :namespace AND thread_id = :thread_id"
CHECKPOINT = f"{THREAD} AND checkpoint_ns = :checkpoint_ns AND checkpoint_id = :checkpoint_id"
COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata"


def _text(value: Any, name: str, *, empty: bool = False) -> str:
    return check_key(value, name, empty=empty)


def _bigint(value: Any) -> bool:
    return type(value) is int and BIGINT_MIN <= value <= BIGINT_MAX


def put(project: str, namespace: str, checkpoint: dict[str, Any]) -> Operation:
    """Store one checkpoint (again: the later one wins)."""
    c = checkpoint if isinstance(checkpoint, dict) else {}
    values = {
        "thread_id": _text(c.get("thread_id"), "checkpoint.thread_id"),
        "checkpoint_ns": _text(c.get("checkpoint_ns"), "checkpoint.checkpoint_ns", empty=True),
        "checkpoint_id": _text(c.get("checkpoint_id"), "checkpoint.checkpoint_id"),
        "parent_id": c.get("parent_id") if isinstance(c.get("parent_id"), str) else None,
        "run_id": (
            _text(c["run_id"], "checkpoint.run_id") if isinstance(c.get("run_id"), str) else None
        ),
        "checkpoint": json_text(c.get("checkpoint")),
        "metadata": json_text(c.get("metadata")),
        "filter": json_text(c.get("filter") if isinstance(c.get("filter"), dict) else {}),
    }
    yield run(
        "INSERT INTO lg_checkpoints (project, namespace, thread_id, checkpoint_ns,"
        " checkpoint_id, parent_id, run_id, checkpoint, metadata, filter)"
        " VALUES (:project, :namespace, :thread_id, :checkpoint_ns, :checkpoint_id,"
        " :parent_id, :run_id, :checkpoint, :metadata, :filter)"
        " ON CONFLICT (project, namespace, thread_id, checkpoint_ns, checkpoint_id) DO UPDATE"
        " SET parent_id = excluded.parent_id, run_id = excluded.run_id,"
        " checkpoint = excluded.checkpoint, metadata = excluded.metadata,"
        " filter = excluded.filter",
        project=project,
        namespace=namespace,
        **values,
    )
    return None


def put_writes(
    project: str,
    namespace: str,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: list[Any],
) -> Operation:
    """Store ``[idx, channel, value]`` writes: a special write (idx < 0) replaces, others
    are kept as first stored."""
    where = {
        "project": project,
        "namespace": namespace,
        "thread_id": _text(thread_id, "thread_id"),
        "checkpoint_ns": _text(checkpoint_ns, "checkpoint_ns", empty=True),
        "checkpoint_id": _text(checkpoint_id, "checkpoint_id"),
    }
    if not isinstance(writes, list) or not all(
        isinstance(w, list) and len(w) == 3 and _bigint(w[0]) and isinstance(w[1], str)
        for w in writes
    ):
        raise bad_request("writes is a list of [idx, channel, value].", "writes")
    for idx, channel, value in writes:
        conflict = (
            "DO UPDATE SET channel = excluded.channel, value = excluded.value,"
            " task_path = excluded.task_path"
            if idx < 0
            else "DO NOTHING"
        )
        yield run(
            "INSERT INTO lg_writes (project, namespace, thread_id, checkpoint_ns, checkpoint_id,"
            " task_id, idx, channel, task_path, value) VALUES (:project, :namespace,"
            " :thread_id, :checkpoint_ns, :checkpoint_id, :task_id, :idx, :channel,"
            " :task_path, :value) ON CONFLICT (project, namespace, thread_id, checkpoint_ns,"
            f" checkpoint_id, task_id, idx) {conflict}",
            **where,
            task_id=_text(task_id, "task_id"),
            idx=idx,
            channel=channel,
            task_path=_text(task_path, "task_path", empty=True),
            value=json_text(value),
        )
    return None


def _tuples(project: str, namespace: str, found: list[tuple[Any, ...]]) -> Operation:
    """Checkpoint rows with their pending writes, as JSON objects."""
    result = []
    for thread_id, checkpoint_ns, checkpoint_id, parent_id, checkpoint, metadata in found:
        writes = yield rows(
            f"SELECT task_id, idx, channel, task_path, value FROM lg_writes WHERE {CHECKPOINT}",
            project=project,
            namespace=namespace,
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
        )
        result.append(
            {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
                "parent_id": parent_id,
                "checkpoint": json.loads(checkpoint),
                "metadata": json.loads(metadata),
                "writes": [[t, int(i), c, p, json.loads(v)] for t, i, c, p, v in writes],
            }
        )
    return result


def get(
    project: str, namespace: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None
) -> Operation:
    """One checkpoint, or the thread's latest in ``checkpoint_ns``; ``None`` if none."""
    where = {
        "project": project,
        "namespace": namespace,
        "thread_id": _text(thread_id, "thread_id"),
        "checkpoint_ns": _text(checkpoint_ns, "checkpoint_ns", empty=True),
    }
    if checkpoint_id is None:
        found = yield rows(
            f"SELECT {COLUMNS} FROM lg_checkpoints WHERE {THREAD}"
            " AND checkpoint_ns = :checkpoint_ns ORDER BY checkpoint_id DESC LIMIT 1",
            **where,
        )
    else:
        found = yield rows(
            f"SELECT {COLUMNS} FROM lg_checkpoints WHERE {CHECKPOINT}",
            **where,
            checkpoint_id=_text(checkpoint_id, "checkpoint_id"),
        )
    listed = yield from _tuples(project, namespace, found)
    return listed[0] if listed else None


def _matches(metadata: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(metadata, dict) and all(
        metadata.get(name) == value for name, value in wanted.items()
    )


def list_checkpoints(
    project: str,
    namespace: str,
    thread_id: str | None = None,
    checkpoint_ns: str | None = None,
    checkpoint_id: str | None = None,
    before: str | None = None,
    filter: dict[str, Any] | None = None,
    limit: int | None = None,
) -> Operation:
    """Checkpoints newest first, by thread, namespace, id, ``before`` an id, metadata."""
    clauses = ["project = :project", "namespace = :namespace"]
    params = {"project": project, "namespace": namespace}
    for column, value in (
        ("thread_id", thread_id),
        ("checkpoint_ns", checkpoint_ns),
        ("checkpoint_id", checkpoint_id),
    ):
        if value is not None:
            clauses.append(f"{column} = :{column}")
            params[column] = _text(value, column, empty=True)
    if before is not None:
        clauses.append("checkpoint_id < :before")
        params["before"] = _text(before, "before")
    if filter is not None and not isinstance(filter, dict):
        raise bad_request("filter is an object.")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise bad_request("limit is an integer.")
    found = yield rows(
        f"SELECT {COLUMNS}, filter FROM lg_checkpoints WHERE {' AND '.join(clauses)}"
        " ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC",
        **params,
    )
    kept = [row[:6] for row in found if not filter or _matches(json.loads(row[6]), filter)]
    if limit is not None:
        kept = kept[: max(limit, 0)]
    return (yield from _tuples(project, namespace, kept))


def delete_thread(project: str, namespace: str, thread_id: str) -> Operation:
    where = {"project": project, "namespace": namespace, "thread_id": _text(thread_id, "thread_id")}
    yield run(f"DELETE FROM lg_writes WHERE {THREAD}", **where)
    yield run(f"DELETE FROM lg_checkpoints WHERE {THREAD}", **where)
    return None


def _strings(values: Any, name: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise bad_request(f"{name} is a list of strings.")
    return values


def delete_for_runs(project: str, namespace: str, run_ids: list[str]) -> Operation:
    """Delete every checkpoint made by one of ``run_ids``, with its writes."""
    for run_id in _strings(run_ids, "run_ids"):
        found = yield rows(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM lg_checkpoints"
            " WHERE project = :project AND namespace = :namespace AND run_id = :run_id",
            project=project,
            namespace=namespace,
            run_id=run_id,
        )
        for thread_id, checkpoint_ns, checkpoint_id in found:
            checkpoint = {
                "project": project,
                "namespace": namespace,
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
            yield run(f"DELETE FROM lg_writes WHERE {CHECKPOINT}", **checkpoint)
            yield run(f"DELETE FROM lg_checkpoints WHERE {CHECKPOINT}", **checkpoint)
    return None


def copy_thread(project: str, namespace: str, source: str, target: str) -> Operation:
    """Copy every checkpoint and write of ``source`` to ``target`` (the copy replaces)."""
    _text(source, "source_thread_id")
    yield from delete_thread(project, namespace, target)
    yield run(
        "INSERT INTO lg_checkpoints (project, namespace, thread_id, checkpoint_ns,"
        " checkpoint_id, parent_id, run_id, checkpoint, metadata, filter)"
        " SELECT project, namespace, :target, checkpoint_ns, checkpoint_id, parent_id, run_id,"
        f" checkpoint, metadata, filter FROM lg_checkpoints WHERE {THREAD}",
        target=target,
        project=project,
        namespace=namespace,
        thread_id=source,
    )
    yield run(
        "INSERT INTO lg_writes (project, namespace, thread_id, checkpoint_ns, checkpoint_id,"
        " task_id, idx, channel, task_path, value)"
        " SELECT project, namespace, :target, checkpoint_ns, checkpoint_id, task_id, idx,"
        f" channel, task_path, value FROM lg_writes WHERE {THREAD}",
        target=target,
        project=project,
        namespace=namespace,
        thread_id=source,
    )
    return None


def prune(project: str, namespace: str, thread_ids: list[str], strategy: str) -> Operation:
    """``keep_latest``: only each namespace's newest checkpoint stays; ``delete``: none."""
    if strategy not in ("keep_latest", "delete"):
        raise bad_request("strategy is keep_latest or delete.")
    for thread_id in _strings(thread_ids, "thread_ids"):
        if strategy == "delete":
            yield from delete_thread(project, namespace, thread_id)
            continue
        where = {"project": project, "namespace": namespace, "thread_id": thread_id}
        found = yield rows(
            "SELECT checkpoint_ns, checkpoint_id FROM lg_checkpoints"
            f" WHERE {THREAD} ORDER BY checkpoint_ns, checkpoint_id DESC",
            **where,
        )
        latest: set[str] = set()
        for checkpoint_ns, checkpoint_id in found:
            if checkpoint_ns not in latest:
                latest.add(checkpoint_ns)
                continue
            checkpoint = {**where, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}
            yield run(f"DELETE FROM lg_writes WHERE {CHECKPOINT}", **checkpoint)
            yield run(f"DELETE FROM lg_checkpoints WHERE {CHECKPOINT}", **checkpoint)
    return None
