"""The file store's operations, written once for SQLite and PostgreSQL (see
:mod:`session.sql.statement`); where the two differ (full-text search) the dialect says."""

from __future__ import annotations

import json
from typing import Any

from ..sql.dialect import Dialect
from ..sql.statement import Returning, in_list, rows, run, run_many
from .errors import FileObjectNotFound
from .models import Candidate, Chunk, FileCounts, VectorStoreFile
from .ranking import words
from .sql_rows import ATTACHED_COLUMNS, attached_of, attached_params, placeholders
from .store import Order

TEXT_CANDIDATES = 1000  # the full-text ranking's depth fused with the vectors'


def paged(
    table: str,
    columns: str,
    ident: str,
    where: str,
    params: dict[str, Any],
    after: str | None,
    limit: int,
    order: Order,
) -> Returning[tuple[list[Any], bool]]:
    """A page of ``table``'s rows by creation (then id), after the row whose ``ident`` is
    ``after``; and whether more follow."""
    compare = ">" if order == "asc" else "<"
    direction = "ASC" if order == "asc" else "DESC"
    cursor = ""
    if after is not None:
        found = yield rows(
            f"SELECT created_at FROM {table} WHERE {where} AND {ident} = :after",
            after=after,
            **params,
        )
        if not found:
            return [], False
        cursor = (
            f" AND (created_at {compare} :at OR (created_at = :at AND {ident} {compare} :after))"
        )
        params = {**params, "at": found[0][0], "after": after}
    found = yield rows(
        f"SELECT {columns} FROM {table} WHERE {where}{cursor}"
        f" ORDER BY created_at {direction}, {ident} {direction} LIMIT :limit",
        limit=limit + 1,
        **params,
    )
    return list(found[:limit]), len(found) > limit


def drop_chunks(dialect: Dialect, where: str, **params: Any) -> Returning[None]:
    """Delete the chunks ``where`` selects (over ``chunks``), with their full text."""
    if not dialect.postgres:
        yield run(
            f"DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE {where})", **params
        )
    yield run(f"DELETE FROM chunks WHERE {where}", **params)


def attach(dialect: Dialect, attached: VectorStoreFile) -> Returning[None]:
    where = "store_id = :store_id AND file_id = :file_id"
    keys = {"store_id": attached.store_id, "file_id": attached.file_id}
    yield from drop_chunks(dialect, where, **keys)
    yield run(f"DELETE FROM vector_store_files WHERE {where}", **keys)
    yield run(
        f"INSERT INTO vector_store_files ({ATTACHED_COLUMNS})"
        f" VALUES ({placeholders(ATTACHED_COLUMNS)})",
        **attached_params(attached),
    )


def get_attached(project: str, store_id: str, file_id: str) -> Returning[VectorStoreFile]:
    found = yield rows(
        f"SELECT {ATTACHED_COLUMNS} FROM vector_store_files"
        " WHERE project = :project AND store_id = :store_id AND file_id = :file_id",
        project=project,
        store_id=store_id,
        file_id=file_id,
    )
    if not found:
        raise FileObjectNotFound("vector store file", file_id, "file_id")
    return attached_of(found[0])


def _current(attached: VectorStoreFile, dialect: Dialect) -> Returning[bool]:
    found = yield rows(
        "SELECT created_at FROM vector_store_files"
        f" WHERE store_id = :store_id AND file_id = :file_id{dialect.for_update}",
        store_id=attached.store_id,
        file_id=attached.file_id,
    )
    return bool(found) and float(found[0][0]) == attached.created_at


def finish(
    dialect: Dialect, attached: VectorStoreFile, chunks: list[Chunk], usage_bytes: int
) -> Returning[bool]:
    if not (yield from _current(attached, dialect)):
        return False
    keys = {"store_id": attached.store_id, "file_id": attached.file_id}
    yield run_many(
        "INSERT INTO chunks (store_id, file_id, position, text, vector)"
        " VALUES (:store_id, :file_id, :position, :text, :vector)",
        [{**keys, "position": c.position, "text": c.text, "vector": c.vector} for c in chunks],
    )
    if not dialect.postgres:
        yield run(
            "INSERT INTO chunks_fts (rowid, text, store_id) SELECT id, text, store_id"
            " FROM chunks WHERE store_id = :store_id AND file_id = :file_id",
            **keys,
        )
    yield run(
        "UPDATE vector_store_files SET status = 'completed', usage_bytes = :usage,"
        " last_error = NULL WHERE store_id = :store_id AND file_id = :file_id",
        usage=usage_bytes,
        **keys,
    )
    return True


def fail(dialect: Dialect, attached: VectorStoreFile, error: dict[str, str]) -> Returning[bool]:
    if not (yield from _current(attached, dialect)):
        return False
    yield run(
        "UPDATE vector_store_files SET status = 'failed', last_error = :error"
        " WHERE store_id = :store_id AND file_id = :file_id",
        error=json.dumps(error),
        store_id=attached.store_id,
        file_id=attached.file_id,
    )
    return True


def usage(store_id: str) -> Returning[tuple[FileCounts, int]]:
    found = yield rows(
        "SELECT status, count(*), coalesce(sum(usage_bytes), 0) FROM vector_store_files"
        " WHERE store_id = :store_id GROUP BY status",
        store_id=store_id,
    )
    counts = {status: int(count) for status, count, _ in found}
    total = sum(int(size) for _, _, size in found)
    known = ("in_progress", "completed", "failed", "cancelled")
    return FileCounts(**{s: counts.get(s, 0) for s in known}), total


def candidates(project: str, store_ids: list[str]) -> Returning[list[Candidate]]:
    """Every chunk of the stores' completed files, with its file's name and attributes."""
    listed, params = in_list("store", store_ids)
    found = yield rows(
        "SELECT c.id, c.store_id, c.file_id, coalesce(f.filename, c.file_id), c.position,"
        " c.text, c.vector, a.attributes FROM chunks c JOIN vector_store_files a"
        " ON a.store_id = c.store_id AND a.file_id = c.file_id"
        " LEFT JOIN files f ON f.id = c.file_id"
        f" WHERE c.store_id IN ({listed}) AND a.project = :project AND a.status = 'completed'",
        project=project,
        **params,
    )
    return [
        Candidate(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], bytes(r[6]), json.loads(r[7]))
        for r in found
    ]


def text_order(dialect: Dialect, store_ids: list[str], text: str) -> Returning[list[int]]:
    """The chunks holding the query's words, best first, by the database's full text:
    FTS5's BM25 in SQLite, ``ts_rank_cd`` over a ``tsvector`` in PostgreSQL."""
    found_words = list(dict.fromkeys(words(text)))
    if not found_words:
        return []
    listed, params = in_list("store", store_ids)
    if dialect.postgres:
        query = " | ".join(found_words)
        found = yield rows(
            "SELECT id FROM chunks, to_tsquery('english', :query) AS q"
            f" WHERE store_id IN ({listed}) AND words @@ q"
            " ORDER BY ts_rank_cd(words, q) DESC, id LIMIT :depth",
            query=query,
            depth=TEXT_CANDIDATES,
            **params,
        )
    else:
        query = " OR ".join(f'"{word}"' for word in found_words)
        found = yield rows(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :query"
            f" AND store_id IN ({listed}) ORDER BY bm25(chunks_fts), rowid LIMIT :depth",
            query=query,
            depth=TEXT_CANDIDATES,
            **params,
        )
    return [int(row[0]) for row in found]
