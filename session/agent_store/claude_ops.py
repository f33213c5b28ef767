"""Claude Agent SDK transcripts as operations: entries appended in order per session key,
deduplicated by ``uuid``, with a per-session summary kept under optimistic concurrency.

A key is ``(project_key, session_id, subpath)``; the main transcript's subpath is ``""``.
Times are Unix milliseconds from the store's clock.
"""

from __future__ import annotations

import json
from typing import Any

from ..sql import Operation, in_list, rows, run
from .errors import bad_request
from .values import Int64, check_key, json_text

SESSION = (
    "project = :project AND namespace = :namespace AND project_key = :project_key"
    " AND session_id = :session_id"
)
KEY = f"{SESSION} AND subpath = :subpath"
MAX_ENTRIES = 1000


def check_subpath(subpath: Any) -> str:
    """``""`` for the main transcript; a relative path without ``.``/``..`` segments."""
    if subpath is None:
        return ""
    if not isinstance(subpath, str) or not subpath:
        raise bad_request("subpath is a non-empty string when given.")
    segments = subpath.replace("\\", "/").split("/")
    if subpath.startswith(("/", "\\")) or ":" in segments[0] or {".", ".."} & set(segments):
        raise bad_request(f"subpath {subpath!r} is not a relative path of plain segments.")
    if "" in segments:
        raise bad_request(f"subpath {subpath!r} has an empty segment.")
    return subpath


def _key(project: str, namespace: str, key: dict[str, Any]) -> dict[str, str]:
    if not isinstance(key, dict):
        raise bad_request("key is an object with project_key and session_id.", "key")
    project_key, session_id = key.get("project_key"), key.get("session_id")
    if not isinstance(project_key, str) or not isinstance(session_id, str) or not session_id:
        raise bad_request(
            "key.project_key is a string and key.session_id a non-empty string.", "key"
        )
    subpath = check_key(check_subpath(key.get("subpath")), "key.subpath", empty=True)
    return {
        "project": project,
        "namespace": namespace,
        "project_key": check_key(project_key, "key.project_key", empty=True),
        "session_id": check_key(session_id, "key.session_id"),
        "subpath": subpath,
    }


def append(
    project: str, namespace: str, key: dict[str, Any], entries: list[Any], now_ms: int
) -> Operation:
    """Append ``entries`` (JSON objects) in order; an entry whose ``uuid`` is stored is skipped."""
    where = _key(project, namespace, key)
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise bad_request(f"entries is a list of at most {MAX_ENTRIES} objects.")
    if not all(isinstance(entry, dict) for entry in entries):
        raise bad_request("Each entry is a JSON object.", "entries")
    for n, entry in enumerate(entries):
        if isinstance(entry.get("uuid"), str):
            check_key(entry["uuid"], f"entries[{n}].uuid", empty=True)
    if not entries:
        return None
    # The upsert takes the transcript's row lock first: concurrent writers queue here.
    yield run(
        "INSERT INTO claude_transcripts (project, namespace, project_key, session_id, subpath,"
        " next_seq, mtime, summary_version, summary_seq) VALUES (:project, :namespace,"
        " :project_key, :session_id, :subpath, 0, :now_ms, 0, 0)"
        " ON CONFLICT (project, namespace, project_key, session_id, subpath)"
        " DO UPDATE SET mtime = CASE WHEN claude_transcripts.mtime < excluded.mtime"
        " THEN excluded.mtime ELSE claude_transcripts.mtime + 1 END",  # strictly increasing
        **where,
        now_ms=now_ms,
    )
    found = yield rows(f"SELECT next_seq FROM claude_transcripts WHERE {KEY}", **where)
    seq = int(found[0][0])
    uuids = [entry["uuid"] for entry in entries if isinstance(entry.get("uuid"), str)]
    stored: set[str] = set()
    if uuids:
        marks, params = in_list("uuid", uuids)
        present = yield rows(
            f"SELECT uuid FROM claude_entries WHERE {KEY} AND uuid IN ({marks})", **where, **params
        )
        stored = {row[0] for row in present}
    for entry in entries:
        uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
        if uuid is not None:
            if uuid in stored:
                continue
            stored.add(uuid)
        yield run(
            "INSERT INTO claude_entries (project, namespace, project_key, session_id, subpath,"
            " seq, uuid, entry) VALUES (:project, :namespace, :project_key, :session_id,"
            " :subpath, :seq, :uuid, :entry)",
            **where,
            seq=seq,
            uuid=uuid,
            entry=json_text(entry),
        )
        seq += 1
    yield run(f"UPDATE claude_transcripts SET next_seq = :seq WHERE {KEY}", seq=seq, **where)
    return None


def load(project: str, namespace: str, key: dict[str, Any]) -> Operation:
    """The entries in append order, or ``None`` for a key never written."""
    where = _key(project, namespace, key)
    known = yield rows(f"SELECT 1 FROM claude_transcripts WHERE {KEY}", **where)
    if not known:
        return None
    found = yield rows(f"SELECT entry FROM claude_entries WHERE {KEY} ORDER BY seq", **where)
    return [json.loads(row[0]) for row in found]


def list_sessions(project: str, namespace: str, project_key: str) -> Operation:
    found = yield rows(
        "SELECT session_id, mtime FROM claude_transcripts"
        " WHERE project = :project AND namespace = :namespace AND project_key = :project_key"
        " AND subpath = ''",
        project=project,
        namespace=namespace,
        project_key=project_key,
    )
    return [{"session_id": row[0], "mtime": int(row[1])} for row in found]


def summary(project: str, namespace: str, key: dict[str, Any]) -> Operation:
    """A main transcript's summary, its ``version``, and the entries not yet folded into it
    (``pending``, in append order, up to ``through``); version -1 for a key never written."""
    where = _key(project, namespace, key)
    found = yield rows(
        "SELECT summary, summary_mtime, summary_version, summary_seq, next_seq"
        f" FROM claude_transcripts WHERE {KEY}",
        **where,
    )
    if not found:
        return {"summary": None, "version": -1, "through": 0, "pending": []}
    text, mtime, version, folded, through = found[0]
    pending = yield rows(
        f"SELECT entry FROM claude_entries WHERE {KEY} AND seq >= :folded AND seq < :through"
        " ORDER BY seq",
        **where,
        folded=folded,
        through=through,
    )
    return {
        "summary": None if text is None else {**json.loads(text), "mtime": int(mtime)},
        "version": int(version),
        "through": int(through),
        "pending": [json.loads(row[0]) for row in pending],
    }


def put_summary(
    project: str,
    namespace: str,
    key: dict[str, Any],
    value: Any,
    version: Int64,
    through: Int64,
    now_ms: int,
) -> Operation:
    """Store ``value``, folded through entry ``through``, if the summary is still at
    ``version``; return whether it was. Its mtime is never older than the transcript's."""
    where = _key(project, namespace, key)
    if not isinstance(value, dict) or not isinstance(version, int) or not isinstance(through, int):
        raise bad_request("summary is an object; version and through are integers.")
    data = {name: part for name, part in value.items() if name != "mtime"}
    changed = yield run(
        "UPDATE claude_transcripts SET summary = :summary,"
        " summary_version = summary_version + 1, summary_seq = :through,"
        " summary_mtime = CASE WHEN mtime > :now_ms THEN mtime ELSE :now_ms END"
        f" WHERE {KEY} AND summary_version = :version",
        summary=json_text(data),
        through=through,
        now_ms=now_ms,
        **where,
        version=version,
    )
    return changed == 1


def list_summaries(project: str, namespace: str, project_key: str) -> Operation:
    found = yield rows(
        "SELECT summary, summary_mtime FROM claude_transcripts WHERE project = :project"
        " AND namespace = :namespace AND project_key = :project_key AND subpath = ''"
        " AND summary IS NOT NULL",
        project=project,
        namespace=namespace,
        project_key=project_key,
    )
    return [{**json.loads(row[0]), "mtime": int(row[1])} for row in found]


def delete(project: str, namespace: str, key: dict[str, Any]) -> Operation:
    """Delete a transcript; deleting a main transcript deletes its subagents' too."""
    where = _key(project, namespace, key)
    clause = SESSION if where["subpath"] == "" else KEY
    yield run(f"DELETE FROM claude_entries WHERE {clause}", **where)
    yield run(f"DELETE FROM claude_transcripts WHERE {clause}", **where)
    return None


def list_subkeys(project: str, namespace: str, key: dict[str, Any]) -> Operation:
    where = _key(project, namespace, key)
    found = yield rows(
        f"SELECT subpath FROM claude_transcripts WHERE {SESSION} AND subpath <> ''"
        " ORDER BY subpath",
        **where,
    )
    return [row[0] for row in found]
