"""Embeddings as the gateway meters them: each call's tokens and cost kept in the usage
ledger (as a turn that is not stored) and added to its key's month, as turns are."""

from __future__ import annotations

import logging
import time
from typing import Any

from session import SessionError, SessionStore
from session.usage import UnstoredTurn

from ..config import GatewayConfig, Route
from ..observability.request_log import CURRENT_REQUEST
from ..upstream.embeddings import Embedded, Embedder, EmbeddingInput
from ..upstream.routing.prices import Price, price_of
from .spending import Spending

logger = logging.getLogger(__name__)


def current_key_id() -> str | None:
    """The API key of the request being served, if any."""
    log = CURRENT_REQUEST.get()
    return log.key_id if log is not None else None


class MeteredEmbeddings:
    """Embeds through :class:`Embedder` and records what each call used and cost."""

    def __init__(
        self, config: GatewayConfig, embedder: Embedder, store: SessionStore, spending: Spending
    ) -> None:
        self._config = config
        self._embedder = embedder
        self._store = store
        self._spending = spending
        self._prices: dict[tuple[str, str], Price | None] = {}

    def check(self, model: str) -> None:
        """A 400 if ``model`` serves no embeddings."""
        self._embedder.check(model)

    async def embed(
        self,
        project: str,
        model: str,
        inputs: EmbeddingInput,
        *,
        dimensions: int | None = None,
        key_id: str | None = None,
    ) -> Embedded:
        """One client call's embeddings, metered under ``project`` and ``key_id``."""
        started = time.time()
        embedded = await self._embedder.embed(model, inputs, dimensions=dimensions)
        await self._record(project, model, embedded.route, embedded.prompt_tokens, started, key_id)
        return embedded

    async def embed_texts(
        self, project: str, texts: list[str], *, key_id: str | None = None
    ) -> list[list[float]]:
        """The vectors of ``texts`` with the file search model, batched and metered."""
        settings = self._config.file_search
        model = settings.embeddings_model
        assert model is not None
        started = time.time()
        vectors, tokens, route = await self._embedder.embed_texts(
            model, texts, settings.embedding_batch_size, dimensions=settings.dimensions
        )
        if route is not None:
            await self._record(project, model, route, tokens, started, key_id)
        return vectors

    def _price(self, model: str, route: Route) -> Price | None:
        key = (model, route.deployment)
        if key not in self._prices:
            listed = self._config.models.get(model)
            pricing = listed.pricing if listed is not None else None
            self._prices[key] = price_of(route.provider, route.upstream_model, pricing)
        return self._prices[key]

    async def _record(
        self,
        project: str,
        model: str,
        route: Route,
        tokens: int,
        started: float,
        key_id: str | None,
    ) -> None:
        usage: dict[str, Any] = {"input_tokens": tokens, "output_tokens": 0}
        price = self._price(model, route)
        cost = price.cost(usage) if price is not None and tokens else None
        record = UnstoredTurn(
            project,
            model,
            started,
            time.time(),
            key_id,
            route.provider_name,
            route.deployment,
            "completed",
            (tokens, 0, 0, 0),
            cost,
            price.source if price is not None and cost is not None else None,
        )
        try:
            await self._store.record_unstored(record)
            if key_id is not None and cost:
                await self._spending.add_cost(key_id, started, cost)
        except SessionError as error:  # the vectors are not lost for their bill
            logger.warning("the usage of an embeddings call was not recorded: %s", error.message)
