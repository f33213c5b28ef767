"""The file store's records as OpenAI's objects, shaped as the ``openai`` SDK parses them
(``FileObject``, ``VectorStore``, ``VectorStoreFile``, ``VectorStoreFileBatch``,
``VectorStoreSearchResponse``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from session.files import FileBatch, FileCounts, Hit, StoredFile, VectorStore, VectorStoreFile


def file_object(file: StoredFile) -> dict[str, Any]:
    return {
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": int(file.created_at),
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
        "expires_at": int(file.expires_at) if file.expires_at is not None else None,
        "status_details": None,
    }


def vector_store_object(store: VectorStore, counts: FileCounts, usage_bytes: int) -> dict[str, Any]:
    expires_at = store.expires_at
    expired = expires_at is not None and expires_at <= time.time()
    return {
        "id": store.id,
        "object": "vector_store",
        "created_at": int(store.created_at),
        "name": store.name,
        "usage_bytes": usage_bytes,
        "file_counts": counts.as_object(),
        "status": "expired" if expired else ("in_progress" if counts.in_progress else "completed"),
        "expires_after": store.expires_after,
        "expires_at": int(expires_at) if expires_at is not None else None,
        "last_active_at": int(store.last_active_at),
        "metadata": store.metadata,
    }


def vector_store_file_object(attached: VectorStoreFile) -> dict[str, Any]:
    return {
        "id": attached.file_id,
        "object": "vector_store.file",
        "usage_bytes": attached.usage_bytes,
        "created_at": int(attached.created_at),
        "vector_store_id": attached.store_id,
        "status": attached.status,
        "last_error": attached.last_error,
        "chunking_strategy": attached.chunking,
        "attributes": attached.attributes,
    }


def batch_object(batch: FileBatch, files: Sequence[VectorStoreFile]) -> dict[str, Any]:
    counts = {s: 0 for s in ("in_progress", "completed", "failed", "cancelled")}
    for attached in files:
        counts[attached.status] += 1
    status = "in_progress" if counts["in_progress"] else "completed"
    return {
        "id": batch.id,
        "object": "vector_store.file_batch",
        "created_at": int(batch.created_at),
        "vector_store_id": batch.store_id,
        "status": status,
        "file_counts": {**counts, "total": len(files)},
    }


def hit_object(hit: Hit) -> dict[str, Any]:
    return {
        "file_id": hit.file_id,
        "filename": hit.filename,
        "score": round(hit.score, 6),
        "attributes": hit.attributes,
        "content": [{"type": "text", "text": hit.text}],
    }


def listed(data: list[dict[str, Any]], more: bool, ident: str = "id") -> dict[str, Any]:
    """OpenAI's cursor page."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0][ident] if data else None,
        "last_id": data[-1][ident] if data else None,
        "has_more": more,
    }
