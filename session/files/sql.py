"""The file store of the SQL backends: a mixin of :class:`session.sql.store.SQLStore`,
each call one transaction of the backend's. Vectors are kept as float32 blobs and compared
exactly in numpy, after the query kept only the chunks the search may find, or, in a
PostgreSQL database with pgvector, searched through its HNSW index
(:mod:`session.files.pgvector`); the full text is the database's own (FTS5, tsvector)."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from typing import Any, ClassVar, TypeVar

from ..sql.dialect import Dialect
from ..sql.statement import Returning, rows, run
from . import sql_ops as ops
from .errors import FileObjectNotFound
from .models import (
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
from .pgvector import Pgvector
from .ranking import depth_of, fuse, hit_of
from .sql_rows import (
    ATTACHED_COLUMNS,
    BATCH_COLUMNS,
    FILE_COLUMNS,
    STORE_COLUMNS,
    attached_of,
    batch_of,
    file_of,
    placeholders,
    store_of,
    store_params,
)
from .sql_search import details, exact_nearest, text_order
from .store import Order

T = TypeVar("T")


class SQLFiles:
    """:class:`session.files.FileStore` over the backend's transactions."""

    dialect: ClassVar[Dialect]
    vector_index: Pgvector | None = None  # ``None``: vectors compared exactly, in numpy

    @abstractmethod
    async def _read(self, make: Any) -> Any: ...

    @abstractmethod
    async def _write(self, make: Any, *, durable: bool = True) -> Any: ...

    # -- files -------------------------------------------------------------------------

    async def create_file(self, file: StoredFile, content: bytes) -> None:
        def create() -> Returning[None]:
            yield run(
                f"INSERT INTO files ({FILE_COLUMNS}) VALUES ({placeholders(FILE_COLUMNS)})",
                **dataclasses.asdict(file),
            )
            yield run(
                "INSERT INTO file_contents (id, content) VALUES (:id, :content)",
                id=file.id,
                content=content,
            )

        await self._write(create)

    def _file(self, project: str, file_id: str) -> Returning[StoredFile]:
        found = yield rows(
            f"SELECT {FILE_COLUMNS} FROM files WHERE project = :project AND id = :id",
            project=project,
            id=file_id,
        )
        if not found:
            raise FileObjectNotFound("file", file_id)
        return file_of(found[0])

    async def get_file(self, project: str, file_id: str) -> StoredFile:
        found: StoredFile = await self._read(lambda: self._file(project, file_id))
        return found

    async def file_content(self, project: str, file_id: str) -> bytes:
        def content() -> Returning[bytes]:
            yield from self._file(project, file_id)
            found = yield rows("SELECT content FROM file_contents WHERE id = :id", id=file_id)
            return bytes(found[0][0])

        found: bytes = await self._read(content)
        return found

    async def list_files(
        self, project: str, purpose: str | None, after: str | None, limit: int, order: Order
    ) -> tuple[list[StoredFile], bool]:
        where = "project = :project"
        params: dict[str, Any] = {"project": project}
        if purpose is not None:
            where, params["purpose"] = where + " AND purpose = :purpose", purpose
        found, more = await self._read(
            lambda: ops.paged("files", FILE_COLUMNS, "id", where, params, after, limit, order)
        )
        return [file_of(r) for r in found], more

    async def delete_file(self, project: str, file_id: str) -> None:
        def delete() -> Returning[None]:
            yield from self._file(project, file_id)
            yield from ops.drop_chunks(self.dialect, "file_id = :file_id", file_id=file_id)
            yield run("DELETE FROM vector_store_files WHERE file_id = :id", id=file_id)
            yield run("DELETE FROM file_contents WHERE id = :id", id=file_id)
            yield run("DELETE FROM files WHERE id = :id", id=file_id)

        await self._write(delete)

    # -- vector stores -----------------------------------------------------------------

    async def create_vector_store(self, store: VectorStore) -> None:
        await self._write(
            lambda: ops_run(
                f"INSERT INTO vector_stores ({STORE_COLUMNS})"
                f" VALUES ({placeholders(STORE_COLUMNS)})",
                store_params(store),
            )
        )

    def _store(self, project: str, store_id: str) -> Returning[VectorStore]:
        found = yield rows(
            f"SELECT {STORE_COLUMNS} FROM vector_stores WHERE project = :project AND id = :id",
            project=project,
            id=store_id,
        )
        if not found:
            raise FileObjectNotFound("vector store", store_id)
        return store_of(found[0])

    async def get_vector_store(self, project: str, store_id: str) -> VectorStore:
        found: VectorStore = await self._read(lambda: self._store(project, store_id))
        return found

    async def update_vector_store(self, store: VectorStore) -> None:
        await self._write(
            lambda: ops_run(
                "UPDATE vector_stores SET name = :name, metadata = :metadata,"
                " expires_after = :expires_after, last_active_at = :last_active_at"
                " WHERE id = :id AND project = :project",
                {k: v for k, v in store_params(store).items() if k != "created_at"},
            ),
            durable=False,
        )

    async def delete_vector_store(self, project: str, store_id: str) -> None:
        def delete() -> Returning[None]:
            yield from self._store(project, store_id)
            yield from ops.drop_chunks(self.dialect, "store_id = :id", id=store_id)
            for table in ("vector_store_files", "file_batches"):
                yield run(f"DELETE FROM {table} WHERE store_id = :id", id=store_id)
            yield run("DELETE FROM vector_stores WHERE id = :id", id=store_id)

        await self._write(delete)

    async def list_vector_stores(
        self, project: str, after: str | None, limit: int, order: Order
    ) -> tuple[list[VectorStore], bool]:
        found, more = await self._read(
            lambda: ops.paged(
                "vector_stores",
                STORE_COLUMNS,
                "id",
                "project = :project",
                {"project": project},
                after,
                limit,
                order,
            )
        )
        return [store_of(r) for r in found], more

    async def vector_store_usage(self, store_id: str) -> tuple[FileCounts, int]:
        found: tuple[FileCounts, int] = await self._read(lambda: ops.usage(store_id))
        return found

    # -- a store's files ---------------------------------------------------------------

    async def attach_file(self, attached: VectorStoreFile) -> None:
        await self._write(lambda: ops.attach(self.dialect, attached))

    async def create_batch(self, batch: FileBatch, files: list[VectorStoreFile]) -> None:
        def create() -> Returning[None]:
            yield run(
                f"INSERT INTO file_batches ({BATCH_COLUMNS})"
                f" VALUES ({placeholders(BATCH_COLUMNS)})",
                **dataclasses.asdict(batch),
            )
            for attached in files:
                yield from ops.attach(self.dialect, attached)

        await self._write(create)

    async def get_batch(self, project: str, store_id: str, batch_id: str) -> FileBatch:
        def get() -> Returning[FileBatch]:
            found = yield rows(
                f"SELECT {BATCH_COLUMNS} FROM file_batches"
                " WHERE project = :project AND store_id = :store_id AND id = :id",
                project=project,
                store_id=store_id,
                id=batch_id,
            )
            if not found:
                raise FileObjectNotFound("file batch", batch_id, "batch_id")
            return batch_of(found[0])

        found: FileBatch = await self._read(get)
        return found

    async def get_vector_store_file(
        self, project: str, store_id: str, file_id: str
    ) -> VectorStoreFile:
        found: VectorStoreFile = await self._read(
            lambda: ops.get_attached(project, store_id, file_id)
        )
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
        where = "project = :project AND store_id = :store_id"
        params: dict[str, Any] = {"project": project, "store_id": store_id}
        if status is not None:
            where, params["status"] = where + " AND status = :status", status
        if batch_id is not None:
            where, params["batch_id"] = where + " AND batch_id = :batch_id", batch_id
        found, more = await self._read(
            lambda: ops.paged(
                "vector_store_files",
                ATTACHED_COLUMNS,
                "file_id",
                where,
                params,
                after,
                limit,
                order,
            )
        )
        return [attached_of(r) for r in found], more

    async def detach_file(self, project: str, store_id: str, file_id: str) -> None:
        def detach() -> Returning[None]:
            yield from ops.get_attached(project, store_id, file_id)
            where = "store_id = :store_id AND file_id = :file_id"
            yield from ops.drop_chunks(self.dialect, where, store_id=store_id, file_id=file_id)
            yield run(
                f"DELETE FROM vector_store_files WHERE {where}", store_id=store_id, file_id=file_id
            )

        await self._write(detach)

    async def finish_file(
        self, attached: VectorStoreFile, chunks: list[Chunk], usage_bytes: int
    ) -> bool:
        done: bool = await self._write(
            lambda: ops.finish(self.dialect, attached, chunks, usage_bytes, self.vector_index)
        )
        return done

    async def fail_file(self, attached: VectorStoreFile, error: dict[str, str]) -> bool:
        done: bool = await self._write(lambda: ops.fail(self.dialect, attached, error))
        return done

    async def file_chunks(self, project: str, store_id: str, file_id: str) -> list[str]:
        def texts() -> Returning[list[str]]:
            yield from ops.get_attached(project, store_id, file_id)
            found = yield rows(
                "SELECT text FROM chunks WHERE store_id = :store_id AND file_id = :file_id"
                " ORDER BY position",
                store_id=store_id,
                file_id=file_id,
            )
            return [row[0] for row in found]

        found: list[str] = await self._read(texts)
        return found

    # -- search ------------------------------------------------------------------------

    async def search_chunks(
        self, project: str, store_ids: list[str], query: SearchQuery
    ) -> list[Hit]:
        if not store_ids:
            return []

        def search() -> Returning[list[Hit]]:
            depth = depth_of(query)
            if self.vector_index is not None:
                by_vector = yield from self.vector_index.nearest(project, store_ids, query, depth)
            else:
                by_vector = yield from exact_nearest(self.dialect, project, store_ids, query, depth)
            by_text: list[int] = []
            if query.text_weight > 0 and by_vector:
                by_text = yield from text_order(self.dialect, project, store_ids, query)
            found = fuse(by_vector, by_text, query)
            chunks = yield from details([key for key, _ in found])
            return [hit_of(chunks[key], score) for key, score in found if key in chunks]

        hits: list[Hit] = await self._read(search)
        return hits

    vector_index_problem: str | None = None  # why a PostgreSQL store has no index

    async def search_index(self) -> tuple[str, str | None]:
        await self._read(lambda: ops_run("SELECT 1", {}))  # the store opened: its index known
        if self.vector_index is not None:
            return f"pgvector's HNSW index (cosine), in schema {self.vector_index.schema}", None
        if self.dialect.postgres:
            return "exact, every vector compared in numpy", self.vector_index_problem
        return "exact, every vector of the files the filter keeps compared in numpy", None


def ops_run(sql: str, params: dict[str, Any]) -> Returning[None]:
    yield run(sql, **params)
