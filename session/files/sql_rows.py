"""Rows of the file store's tables as records, and records as statement parameters."""

from __future__ import annotations

import json
from typing import Any

from .models import FileBatch, StoredFile, VectorStore, VectorStoreFile

FILE_COLUMNS = "id, project, filename, purpose, bytes, created_at, expires_at"
STORE_COLUMNS = "id, project, name, created_at, last_active_at, metadata, expires_after"
ATTACHED_COLUMNS = (
    "store_id, file_id, project, created_at, status, chunking, attributes, last_error,"
    " usage_bytes, batch_id"
)
BATCH_COLUMNS = "id, store_id, project, created_at"


def placeholders(columns: str) -> str:
    return ", ".join(f":{name.strip()}" for name in columns.split(","))


def file_of(row: Any) -> StoredFile:
    return StoredFile(row[0], row[1], row[2], row[3], int(row[4]), float(row[5]), row[6])


def store_of(row: Any) -> VectorStore:
    after = json.loads(row[6]) if row[6] else None
    return VectorStore(
        row[0], row[1], row[2], float(row[3]), float(row[4]), json.loads(row[5]), after
    )


def store_params(store: VectorStore) -> dict[str, Any]:
    return {
        "id": store.id,
        "project": store.project,
        "name": store.name,
        "created_at": store.created_at,
        "last_active_at": store.last_active_at,
        "metadata": json.dumps(store.metadata),
        "expires_after": json.dumps(store.expires_after) if store.expires_after else None,
    }


def attached_of(row: Any) -> VectorStoreFile:
    return VectorStoreFile(
        row[0],
        row[1],
        row[2],
        float(row[3]),
        row[4],
        json.loads(row[5]),
        json.loads(row[6]),
        json.loads(row[7]) if row[7] else None,
        int(row[8]),
        row[9],
    )


def attached_params(attached: VectorStoreFile) -> dict[str, Any]:
    return {
        "store_id": attached.store_id,
        "file_id": attached.file_id,
        "project": attached.project,
        "created_at": attached.created_at,
        "status": attached.status,
        "chunking": json.dumps(attached.chunking),
        "attributes": json.dumps(attached.attributes),
        "last_error": json.dumps(attached.last_error) if attached.last_error else None,
        "usage_bytes": attached.usage_bytes,
        "batch_id": attached.batch_id,
    }


def batch_of(row: Any) -> FileBatch:
    return FileBatch(row[0], row[1], row[2], float(row[3]))
