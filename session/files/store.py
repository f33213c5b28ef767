"""The file store: a role of a session backend, kept apart from :class:`SessionStore`.

A backend that keeps files implements :class:`FileStore` (the memory, SQLite and PostgreSQL
stores do); the gateway checks for it as it checks an upstream's capabilities. Every call
is scoped to a project: another project's ids are not found. Deleting a file, detaching it
or deleting its store removes its chunks and vectors in the same transaction.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

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

Order = Literal["asc", "desc"]


@runtime_checkable
class FileStore(Protocol):
    """Files, vector stores, their files' chunks and the search over them."""

    # -- files -------------------------------------------------------------------------

    async def create_file(self, file: StoredFile, content: bytes) -> None:
        """Keep a file and its bytes, both or neither."""

    async def get_file(self, project: str, file_id: str) -> StoredFile:
        """The file; :class:`FileObjectNotFound` if the project has none of that id."""
        ...

    async def file_content(self, project: str, file_id: str) -> bytes:
        """The file's bytes."""
        ...

    async def list_files(
        self, project: str, purpose: str | None, after: str | None, limit: int, order: Order
    ) -> tuple[list[StoredFile], bool]:
        """A page of the project's files by creation, and whether more follow."""
        ...

    async def delete_file(self, project: str, file_id: str) -> None:
        """Delete a file, detaching it from every vector store (its chunks go too)."""

    # -- vector stores -----------------------------------------------------------------

    async def create_vector_store(self, store: VectorStore) -> None: ...

    async def get_vector_store(self, project: str, store_id: str) -> VectorStore: ...

    async def update_vector_store(self, store: VectorStore) -> None:
        """Write the store's name, metadata, expiry and last activity."""

    async def delete_vector_store(self, project: str, store_id: str) -> None:
        """Delete a store with its attached files' records and chunks (not the files)."""

    async def list_vector_stores(
        self, project: str, after: str | None, limit: int, order: Order
    ) -> tuple[list[VectorStore], bool]: ...

    async def vector_store_usage(self, store_id: str) -> tuple[FileCounts, int]:
        """The store's files by status, and the bytes its chunks take."""
        ...

    # -- a store's files ---------------------------------------------------------------

    async def attach_file(self, attached: VectorStoreFile) -> None:
        """Attach a file (in progress), replacing an earlier attachment and its chunks."""

    async def create_batch(self, batch: FileBatch, files: list[VectorStoreFile]) -> None:
        """Attach ``files`` as one batch."""

    async def get_batch(self, project: str, store_id: str, batch_id: str) -> FileBatch: ...

    async def get_vector_store_file(
        self, project: str, store_id: str, file_id: str
    ) -> VectorStoreFile: ...

    async def list_vector_store_files(
        self,
        project: str,
        store_id: str,
        after: str | None,
        limit: int,
        order: Order,
        status: FileStatus | None = None,
        batch_id: str | None = None,
    ) -> tuple[list[VectorStoreFile], bool]: ...

    async def detach_file(self, project: str, store_id: str, file_id: str) -> None:
        """Detach a file from a store; its chunks go with it."""

    async def finish_file(
        self, attached: VectorStoreFile, chunks: list[Chunk], usage_bytes: int
    ) -> bool:
        """Keep the chunks of a file still attached as ``attached`` was (same creation),
        and mark it completed; ``False`` (nothing written) if it was detached meanwhile."""
        ...

    async def fail_file(self, attached: VectorStoreFile, error: dict[str, str]) -> bool:
        """Mark a file still attached as ``attached`` was as failed with ``error``."""
        ...

    async def file_chunks(self, project: str, store_id: str, file_id: str) -> list[str]:
        """The texts of an attached file's chunks, in order."""
        ...

    # -- search ------------------------------------------------------------------------

    async def search_chunks(
        self, project: str, store_ids: list[str], query: SearchQuery
    ) -> list[Hit]:
        """The chunks of the stores' completed files that best answer ``query``."""
        ...

    async def search_index(self) -> tuple[str, str | None]:
        """How searches compare vectors here, and why not through an index where an index
        could be had (``None``: nothing to fix)."""
        ...
