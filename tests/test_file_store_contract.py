"""The file store contract (:class:`session.files.FileStore`), for every backend: files and
their bytes, vector stores, attached files' chunks, search, and what a delete takes along."""

from __future__ import annotations

import dataclasses
import time

import pytest

from session import SessionStore
from session.files import (
    Chunk,
    FileBatch,
    FileObjectNotFound,
    FileStore,
    SearchQuery,
    StoredFile,
    VectorStore,
    VectorStoreFile,
    vector_bytes,
)

pytestmark = [pytest.mark.anyio, pytest.mark.contract]

STATIC = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}


def files_of(store: SessionStore) -> FileStore:
    assert isinstance(store, FileStore)
    return store


async def a_file(files: FileStore, file_id: str, project: str = "p1", at: float = 0.0) -> None:
    record = StoredFile(file_id, project, f"{file_id}.txt", "assistants", 5, at or time.time())
    await files.create_file(record, b"hello")


async def a_store(files: FileStore, store_id: str, project: str = "p1") -> None:
    now = time.time()
    await files.create_vector_store(VectorStore(store_id, project, "docs", now, now, {"k": "v"}))


def attached(store_id: str, file_id: str, project: str = "p1", **fields: object) -> VectorStoreFile:
    record = VectorStoreFile(store_id, file_id, project, time.time(), "in_progress", STATIC)
    return dataclasses.replace(record, **fields)  # type: ignore[arg-type]


def chunk(position: int, text: str, vector: list[float]) -> Chunk:
    return Chunk(position, text, vector_bytes(vector))


async def test_files_keep_their_bytes_and_pages(store: SessionStore) -> None:
    files = files_of(store)
    for n in range(3):
        await a_file(files, f"file-{n}", at=1000.0 + n)
    await a_file(files, "file-other", project="p2")
    assert await files.file_content("p1", "file-1") == b"hello"
    first, more = await files.list_files("p1", None, None, 2, "desc")
    assert [f.id for f in first] == ["file-2", "file-1"] and more
    rest, more = await files.list_files("p1", None, "file-1", 2, "desc")
    assert [f.id for f in rest] == ["file-0"] and not more
    none, _ = await files.list_files("p1", "batch", None, 10, "asc")
    assert none == []
    with pytest.raises(FileObjectNotFound):
        await files.get_file("p1", "file-other")
    await files.delete_file("p1", "file-1")
    with pytest.raises(FileObjectNotFound):
        await files.file_content("p1", "file-1")


async def test_chunks_are_searched_and_go_with_their_file(store: SessionStore) -> None:
    files = files_of(store)
    await a_file(files, "file-a")
    await a_file(files, "file-b")
    await a_store(files, "vs_1")
    one = attached("vs_1", "file-a", attributes={"lang": "en", "year": 2024})
    two = attached("vs_1", "file-b", attributes={"lang": "fr", "year": 2020})
    await files.create_batch(FileBatch("vsfb_1", "vs_1", "p1", time.time()), [one, two])
    assert (await files.vector_store_usage("vs_1"))[0].in_progress == 2
    assert await files.finish_file(one, [chunk(0, "apples grow on trees", [1, 0, 0])], 30)
    assert await files.finish_file(two, [chunk(0, "bananas are yellow", [0, 1, 0])], 20)
    counts, size = await files.vector_store_usage("vs_1")
    assert counts.completed == 2 and size == 50
    query = SearchQuery("apples", vector_bytes([0.9, 0.1, 0]), limit=5)
    hits = await files.search_chunks("p1", ["vs_1"], query)
    assert [h.file_id for h in hits] == ["file-a", "file-b"]
    assert hits[0].filename == "file-a.txt" and hits[0].attributes["lang"] == "en"
    assert 0.9 < hits[0].score <= 1.0
    filtered = dataclasses.replace(query, filters={"type": "eq", "key": "lang", "value": "fr"})
    assert [h.file_id for h in await files.search_chunks("p1", ["vs_1"], filtered)] == ["file-b"]
    compound = {
        "type": "and",
        "filters": [
            {"type": "gte", "key": "year", "value": 2021},
            {"type": "ne", "key": "lang", "value": "fr"},
        ],
    }
    found = await files.search_chunks("p1", ["vs_1"], dataclasses.replace(query, filters=compound))
    assert [h.file_id for h in found] == ["file-a"]
    # Full text fused with the vectors: the words outrank a vector pointing elsewhere.
    hybrid = SearchQuery("bananas", vector_bytes([1, 0, 0]), text_weight=3.0)
    assert (await files.search_chunks("p1", ["vs_1"], hybrid))[0].file_id == "file-b"
    high = dataclasses.replace(query, score_threshold=0.95)
    assert [h.file_id for h in await files.search_chunks("p1", ["vs_1"], high)] == ["file-a"]
    assert await files.search_chunks("p2", ["vs_1"], query) == []  # another project's
    assert await files.file_chunks("p1", "vs_1", "file-a") == ["apples grow on trees"]
    await files.delete_file("p1", "file-a")
    assert [h.file_id for h in await files.search_chunks("p1", ["vs_1"], query)] == ["file-b"]
    with pytest.raises(FileObjectNotFound):
        await files.get_vector_store_file("p1", "vs_1", "file-a")
    await files.delete_vector_store("p1", "vs_1")
    assert await files.search_chunks("p1", ["vs_1"], query) == []
    with pytest.raises(FileObjectNotFound):
        await files.get_batch("p1", "vs_1", "vsfb_1")


async def test_a_file_detached_while_processed_keeps_nothing(store: SessionStore) -> None:
    files = files_of(store)
    await a_file(files, "file-a")
    await a_store(files, "vs_1")
    first = attached("vs_1", "file-a")
    await files.attach_file(first)
    await files.detach_file("p1", "vs_1", "file-a")
    assert not await files.finish_file(first, [chunk(0, "late", [1, 0])], 4)
    assert not await files.fail_file(first, {"code": "server_error", "message": "x"})
    again = attached("vs_1", "file-a", created_at=first.created_at + 1)
    await files.attach_file(again)
    assert not await files.finish_file(first, [chunk(0, "stale", [1, 0])], 5)  # an older run
    assert await files.fail_file(again, {"code": "invalid_file", "message": "bad"})
    found = await files.get_vector_store_file("p1", "vs_1", "file-a")
    assert found.status == "failed" and found.last_error == {
        "code": "invalid_file",
        "message": "bad",
    }
    page, more = await files.list_vector_store_files("p1", "vs_1", None, 10, "asc", "failed")
    assert [a.file_id for a in page] == ["file-a"] and not more
    assert await files.file_chunks("p1", "vs_1", "file-a") == []


async def test_vector_stores_update_and_page(store: SessionStore) -> None:
    files = files_of(store)
    for n in range(3):
        await a_store(files, f"vs_{n}")
    found = await files.get_vector_store("p1", "vs_1")
    changed = dataclasses.replace(
        found, name="renamed", expires_after={"anchor": "last_active_at", "days": 2}
    )
    await files.update_vector_store(changed)
    again = await files.get_vector_store("p1", "vs_1")
    assert again.name == "renamed" and again.expires_at == again.last_active_at + 2 * 86400
    page, more = await files.list_vector_stores("p1", None, 2, "asc")
    assert [s.id for s in page] == ["vs_0", "vs_1"] and more
    with pytest.raises(FileObjectNotFound):
        await files.get_vector_store("p2", "vs_0")
