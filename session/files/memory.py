"""The file store in memory: records in dictionaries, exact search over every chunk of
the files that pass the filter, in one matrix product.

Every method runs without awaiting, so each is atomic on the event loop.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .errors import FileObjectNotFound
from .filters import matches
from .models import (
    Candidate,
    Chunk,
    FileBatch,
    FileCounts,
    FileStatus,
    Hit,
    SearchQuery,
    StoredFile,
    VectorStore,
    VectorStoreFile,
)
from .ranking import best_of, bm25_order, depth_of, fuse, hit_of, words
from .store import Order

T = TypeVar("T")


@dataclass(frozen=True)
class Kept:
    """A file's chunks, with their vectors as one matrix for each length (the chunks'
    indexes and the matrix) and their words counted, made once as the file is kept."""

    chunks: list[Chunk]
    by_length: dict[int, tuple[list[int], np.ndarray[Any, Any]]]
    words: list[Counter[str]]


def kept(chunks: list[Chunk]) -> Kept:
    lengths: dict[int, list[int]] = {}
    for n, chunk in enumerate(chunks):
        lengths.setdefault(len(chunk.vector), []).append(n)
    by_length = {
        length: (
            positions,
            np.frombuffer(b"".join(chunks[n].vector for n in positions), dtype="<f4").reshape(
                len(positions), -1
            ),
        )
        for length, positions in lengths.items()
        if length
    }
    return Kept(list(chunks), by_length, [Counter(words(c.text)) for c in chunks])


def page(
    records: Sequence[T],
    ident: Callable[[T], str],
    after: str | None,
    limit: int,
    order: Order,
) -> tuple[list[T], bool]:
    """A page of ``records`` (oldest first) after the one named ``after``."""
    ordered = list(records) if order == "asc" else list(reversed(records))
    if after is not None:
        ids = [ident(r) for r in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    return ordered[:limit], len(ordered) > limit


class MemoryFiles:
    """:class:`session.files.FileStore` kept in this process."""

    def __init__(self) -> None:
        self._file_records: dict[str, StoredFile] = {}
        self._file_bytes: dict[str, bytes] = {}
        self._vector_stores: dict[str, VectorStore] = {}
        self._attached: dict[tuple[str, str], VectorStoreFile] = {}
        self._batches: dict[str, FileBatch] = {}
        self._chunks: dict[tuple[str, str], Kept] = {}

    # -- files -------------------------------------------------------------------------

    async def create_file(self, file: StoredFile, content: bytes) -> None:
        self._file_records[file.id] = file
        self._file_bytes[file.id] = bytes(content)

    async def get_file(self, project: str, file_id: str) -> StoredFile:
        found = self._file_records.get(file_id)
        if found is None or found.project != project:
            raise FileObjectNotFound("file", file_id)
        return found

    async def file_content(self, project: str, file_id: str) -> bytes:
        await self.get_file(project, file_id)
        return self._file_bytes[file_id]

    async def list_files(
        self, project: str, purpose: str | None, after: str | None, limit: int, order: Order
    ) -> tuple[list[StoredFile], bool]:
        mine = [
            f
            for f in self._file_records.values()
            if f.project == project and (purpose is None or f.purpose == purpose)
        ]
        return page(mine, lambda f: f.id, after, limit, order)

    async def delete_file(self, project: str, file_id: str) -> None:
        await self.get_file(project, file_id)
        del self._file_records[file_id], self._file_bytes[file_id]
        for key in [k for k in self._attached if k[1] == file_id]:
            del self._attached[key]
            self._chunks.pop(key, None)

    # -- vector stores -----------------------------------------------------------------

    async def create_vector_store(self, store: VectorStore) -> None:
        self._vector_stores[store.id] = store

    async def get_vector_store(self, project: str, store_id: str) -> VectorStore:
        found = self._vector_stores.get(store_id)
        if found is None or found.project != project:
            raise FileObjectNotFound("vector store", store_id)
        return found

    async def update_vector_store(self, store: VectorStore) -> None:
        if store.id in self._vector_stores:
            self._vector_stores[store.id] = store

    async def delete_vector_store(self, project: str, store_id: str) -> None:
        await self.get_vector_store(project, store_id)
        del self._vector_stores[store_id]
        for key in [k for k in self._attached if k[0] == store_id]:
            del self._attached[key]
            self._chunks.pop(key, None)
        for batch_id in [b.id for b in self._batches.values() if b.store_id == store_id]:
            del self._batches[batch_id]

    async def list_vector_stores(
        self, project: str, after: str | None, limit: int, order: Order
    ) -> tuple[list[VectorStore], bool]:
        mine = [s for s in self._vector_stores.values() if s.project == project]
        return page(mine, lambda s: s.id, after, limit, order)

    async def vector_store_usage(self, store_id: str) -> tuple[FileCounts, int]:
        attached = [a for key, a in self._attached.items() if key[0] == store_id]
        counts = {status: 0 for status in ("in_progress", "completed", "failed", "cancelled")}
        for a in attached:
            counts[a.status] += 1
        return FileCounts(**counts), sum(a.usage_bytes for a in attached)

    # -- a store's files ---------------------------------------------------------------

    async def attach_file(self, attached: VectorStoreFile) -> None:
        key = (attached.store_id, attached.file_id)
        self._attached.pop(key, None)  # re-attached: last in the store's order
        self._attached[key] = attached
        self._chunks.pop(key, None)

    async def create_batch(self, batch: FileBatch, files: list[VectorStoreFile]) -> None:
        self._batches[batch.id] = batch
        for attached in files:
            await self.attach_file(attached)

    async def get_batch(self, project: str, store_id: str, batch_id: str) -> FileBatch:
        found = self._batches.get(batch_id)
        if found is None or found.project != project or found.store_id != store_id:
            raise FileObjectNotFound("file batch", batch_id, "batch_id")
        return found

    async def get_vector_store_file(
        self, project: str, store_id: str, file_id: str
    ) -> VectorStoreFile:
        found = self._attached.get((store_id, file_id))
        if found is None or found.project != project:
            raise FileObjectNotFound("vector store file", file_id, "file_id")
        return found

    async def list_vector_store_files(
        self,
        project: str,
        store_id: str,
        after: str | None,
        limit: int,
        order: Order,
        status: FileStatus | None = None,
        batch_id: str | None = None,
    ) -> tuple[list[VectorStoreFile], bool]:
        mine = [
            a
            for key, a in self._attached.items()
            if key[0] == store_id
            and a.project == project
            and (status is None or a.status == status)
            and (batch_id is None or a.batch_id == batch_id)
        ]
        return page(mine, lambda a: a.file_id, after, limit, order)

    async def detach_file(self, project: str, store_id: str, file_id: str) -> None:
        await self.get_vector_store_file(project, store_id, file_id)
        del self._attached[(store_id, file_id)]
        self._chunks.pop((store_id, file_id), None)

    def _current(self, attached: VectorStoreFile) -> bool:
        now = self._attached.get((attached.store_id, attached.file_id))
        return now is not None and now.created_at == attached.created_at

    async def finish_file(
        self, attached: VectorStoreFile, chunks: list[Chunk], usage_bytes: int
    ) -> bool:
        if not self._current(attached):
            return False
        key = (attached.store_id, attached.file_id)
        self._chunks[key] = kept(chunks)
        self._attached[key] = dataclasses.replace(
            self._attached[key], status="completed", usage_bytes=usage_bytes, last_error=None
        )
        return True

    async def fail_file(self, attached: VectorStoreFile, error: dict[str, str]) -> bool:
        if not self._current(attached):
            return False
        key = (attached.store_id, attached.file_id)
        self._attached[key] = dataclasses.replace(
            self._attached[key], status="failed", last_error=dict(error)
        )
        return True

    async def file_chunks(self, project: str, store_id: str, file_id: str) -> list[str]:
        await self.get_vector_store_file(project, store_id, file_id)
        found = self._chunks.get((store_id, file_id))
        return [] if found is None else [c.text for c in found.chunks]

    # -- search ------------------------------------------------------------------------

    async def search_chunks(
        self, project: str, store_ids: list[str], query: SearchQuery
    ) -> list[Hit]:
        rows: list[tuple[VectorStoreFile, Chunk]] = []
        similarities, docs = [], []
        wanted = np.frombuffer(query.vector, dtype="<f4")
        for key, found in self._chunks.items():
            attached = self._attached.get(key)
            if (
                key[0] not in store_ids
                or attached is None
                or attached.project != project
                or not matches(query.filters, attached.attributes)
                or (same := found.by_length.get(len(query.vector))) is None
            ):
                continue
            positions, matrix = same
            similarities.append(matrix @ wanted)
            rows += [(attached, found.chunks[n]) for n in positions]
            docs += [found.words[n] for n in positions] if query.text_weight > 0 else []
        if not rows:
            return []
        by_vector = best_of(np.concatenate(similarities), depth_of(query))
        by_text = bm25_order(docs, range(len(docs)), query.text) if docs else []
        return [
            hit_of(self._candidate(n, *rows[n]), score)
            for n, score in fuse(by_vector, by_text, query)
        ]

    async def search_index(self) -> tuple[str, str | None]:
        return "exact, every vector compared in memory", None

    def _candidate(self, key: int, attached: VectorStoreFile, chunk: Chunk) -> Candidate:
        record = self._file_records.get(attached.file_id)
        name = record.filename if record is not None else attached.file_id
        return Candidate(
            key,
            attached.store_id,
            attached.file_id,
            name,
            chunk.position,
            chunk.text,
            chunk.vector,
            attached.attributes,
        )
