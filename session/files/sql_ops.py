"""The file store's operations, written once for SQLite and PostgreSQL (see
:mod:`session.sql.statement`); where the two differ (full-text search) the dialect says."""

from __future__ import annotations

import json
from typing import Any

from ..sql.dialect import Dialect
from ..sql.statement import Returning, rows, run, run_many
from .errors import FileObjectNotFound
from .models import Chunk, FileCounts, VectorStoreFile
from .pgvector import Pgvector, literal
from .sql_rows import ATTACHED_COLUMNS, attached_of, attached_params, placeholders
from .store import Order


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
    dialect: Dialect,
    attached: VectorStoreFile,
    chunks: list[Chunk],
    usage_bytes: int,
    index: Pgvector | None = None,
) -> Returning[bool]:
    """Keep a processed file's chunks (their vectors as float32 bytes, or in pgvector's
    column when the store has it) and mark it completed, unless it was attached again or
    detached meanwhile."""
    if not (yield from _current(attached, dialect)):
        return False
    keys = {"store_id": attached.store_id, "file_id": attached.file_id}
    if index is None:
        yield run_many(
            "INSERT INTO chunks (store_id, file_id, position, text, vector)"
            " VALUES (:store_id, :file_id, :position, :text, :vector)",
            [{**keys, "position": c.position, "text": c.text, "vector": c.vector} for c in chunks],
        )
    else:
        yield run_many(
            "INSERT INTO chunks (store_id, file_id, position, text, vector, embedding)"
            " VALUES (:store_id, :file_id, :position, :text, '',"
            f" (:embedding)::{index.name('vector')})",
            [
                {**keys, "position": c.position, "text": c.text, "embedding": literal(c.vector)}
                for c in chunks
            ],
        )
        for dimensions in sorted({len(c.vector) // 4 for c in chunks}):
            yield from index.ensure_index(dimensions)
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
