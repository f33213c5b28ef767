"""Attached files processed in the background: text extracted, chunked, embedded and kept
with their vectors, then the file marked ``completed`` (or ``failed`` with ``last_error``).

Each file runs in a task of its own, a few at a time; a file detached or deleted while it
runs keeps nothing (the store writes its chunks only if it is still attached as it was).
At shutdown the tasks still running are cancelled and their files marked failed, so that
none stays ``in_progress`` for ever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from session import SessionError
from session.files import Chunk, FileObjectNotFound, FileStore, VectorStoreFile, vector_bytes

from ..upstream.errors import UpstreamError
from .chunking import chunks
from .extract import Unreadable, text_of

logger = logging.getLogger(__name__)

Embed = Callable[[str, list[str], str | None], Awaitable[list[list[float]]]]
"""Embeds texts for a project (and the key that asked), metered."""

PARALLEL_FILES = 4


class Ingestion:
    """Runs the processing of attached files within the app's lifespan."""

    def __init__(self, files: FileStore, embed: Embed, max_chunks: int) -> None:
        self._files = files
        self._embed = embed
        self._max_chunks = max_chunks
        self._slots = asyncio.Semaphore(PARALLEL_FILES)
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, attached: VectorStoreFile, key_id: str | None) -> None:
        """Process ``attached`` in the background."""
        task = asyncio.create_task(self._run(attached, key_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait until every file started so far is processed."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def finish(self, grace: float) -> None:
        """Let files finish for ``grace`` seconds, then stop (and fail) the rest."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def _run(self, attached: VectorStoreFile, key_id: str | None) -> None:
        try:
            async with self._slots:
                await self._process(attached, key_id)
        except asyncio.CancelledError:
            await self._fail(attached, "server_error", "The gateway stopped while processing.")
            raise
        except Unreadable as error:
            await self._fail(attached, error.code, error.message)
        except UpstreamError as error:
            await self._fail(attached, "server_error", f"Embedding failed: {error.message}")
        except FileObjectNotFound:
            await self._fail(attached, "invalid_file", "The file was deleted.")
        except SessionError as error:
            logger.warning("file %s was not processed: %s", attached.file_id, error.message)
        except Exception:
            logger.exception("file %s failed to process", attached.file_id)
            await self._fail(attached, "server_error", "The file could not be processed.")

    async def _process(self, attached: VectorStoreFile, key_id: str | None) -> None:
        record = await self._files.get_file(attached.project, attached.file_id)
        content = await self._files.file_content(attached.project, attached.file_id)
        text = await asyncio.to_thread(text_of, content, record.filename)
        pieces = await asyncio.to_thread(chunks, text, attached.chunking)
        if len(pieces) > self._max_chunks:
            raise Unreadable(
                "invalid_file",
                f"The file '{record.filename}' makes {len(pieces)} chunks, more than "
                f"the {self._max_chunks} a file may.",
            )
        vectors = await self._embed(attached.project, pieces, key_id)
        kept = [
            Chunk(n, piece, vector_bytes(vector))
            for n, (piece, vector) in enumerate(zip(pieces, vectors, strict=True))
        ]
        size = sum(len(c.text.encode()) + len(c.vector) for c in kept)
        await self._files.finish_file(attached, kept, size)

    async def _fail(self, attached: VectorStoreFile, code: str, message: str) -> None:
        try:
            await asyncio.shield(
                self._files.fail_file(attached, {"code": code, "message": message})
            )
        except SessionError as error:
            logger.warning("file %s was not marked failed: %s", attached.file_id, error.message)
