"""The gateway's files, vector stores and embeddings, made once for the app's lifespan:
the metered embeddings, the store's :class:`FileStore` role, and the background ingestion."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from session import SessionStore, StoreUnavailable
from session.files import FileObjectNotFound, FileStore, Hit
from session.shared import SharedLimits

from ..config import GatewayConfig
from ..errors import APIError, invalid_request
from ..retrieval.ingest import Ingestion
from ..retrieval.search import SearchOptions, search
from ..upstream import ProviderClient
from ..upstream.embeddings import Embedder
from ..upstream.routing.cooldowns import Cooldowns
from .embeddings import MeteredEmbeddings
from .spending import Spending

logger = logging.getLogger(__name__)
server_logger = logging.getLogger("gateway.server")  # the start-up lines'


@dataclass
class FileServices:
    """What the Files, Vector Stores and Embeddings APIs and the ``file_search`` tool use."""

    config: GatewayConfig
    embeddings: MeteredEmbeddings
    store: FileStore | None  # ``None``: the backend keeps no files
    ingestion: Ingestion | None  # ``None``: no embeddings model, no vector stores

    def files(self) -> FileStore:
        """The file store; a 400 if the backend has none."""
        if self.store is None:
            raise APIError(
                501, "This gateway's session backend keeps no files.", code="unsupported"
            )
        return self.store

    def searchable(self) -> tuple[FileStore, Ingestion]:
        """The store and ingestion vector stores need; a 400 saying how to configure them."""
        if self.ingestion is None or self.store is None:
            raise invalid_request(
                "Vector stores are not enabled on this gateway: the operator sets "
                "file_search.embeddings_model to a model that serves embeddings.",
                code="vector_stores_disabled",
            )
        return self.store, self.ingestion

    async def embed_texts(
        self, project: str, texts: list[str], key_id: str | None
    ) -> list[list[float]]:
        return await self.embeddings.embed_texts(project, texts, key_id=key_id)

    async def check_stores(self, project: str, store_ids: list[str], param: str) -> None:
        """A 400 naming the first of ``store_ids`` the project does not have."""
        files, _ = self.searchable()
        for store_id in store_ids:
            try:
                await files.get_vector_store(project, store_id)
            except FileObjectNotFound:
                raise invalid_request(
                    f"Vector store '{store_id}' not found.", param=param, code="not_found"
                ) from None

    async def search(
        self,
        project: str,
        store_ids: list[str],
        query: str,
        options: SearchOptions,
        key_id: str | None = None,
    ) -> list[Hit]:
        """The best chunks of ``store_ids`` for ``query``."""
        files, _ = self.searchable()
        return await search(files, self.embed_texts, project, store_ids, query, options, key_id)


async def say_search_index(files: FileStore) -> None:
    """Log at start-up how vector store searches compare vectors: a warning when the
    store could have an index and has none, saying what gives it one."""
    try:
        how, problem = await files.search_index()
    except StoreUnavailable:
        return  # said once the store is back: its first search opens it
    if problem is None:
        server_logger.info("vector store search: %s", how)
    else:
        server_logger.warning("vector store search: %s: %s", how, problem)


@asynccontextmanager
async def file_services(
    config: GatewayConfig,
    store: SessionStore,
    clients: Mapping[str, ProviderClient],
    shared: SharedLimits,
    spending: Spending,
    grace: float,
) -> AsyncIterator[FileServices]:
    """The file services for the app's lifespan; files still processing at its end are
    given ``grace`` seconds, then stopped and marked failed."""
    embedder = Embedder(config, clients, Cooldowns(config.routing.cooldown, shared))
    embeddings = MeteredEmbeddings(config, embedder, store, spending)
    files = store if isinstance(store, FileStore) else None
    ingestion = None
    if config.file_search.configured and files is not None:
        services = FileServices(config, embeddings, files, None)
        ingestion = Ingestion(files, services.embed_texts, config.file_search.max_chunks_per_file)
    else:
        logger.debug(
            "file search is off: set file_search.embeddings_model to a model that serves "
            "embeddings to enable vector stores and the file_search tool"
        )
    services = FileServices(config, embeddings, files, ingestion)
    if ingestion is not None and files is not None:
        await say_search_index(files)
    try:
        yield services
    finally:
        if ingestion is not None:
            await ingestion.finish(grace)
