"""The interface every session backend implements."""

from __future__ import annotations

from typing import Protocol

from .models import ItemPage, ResolvedChain, StoredResponse
from .paging import Order
from .policy import UNSET, ExpectedParent


class SessionStore(Protocol):
    """Async storage of response turns, scoped by project.

    A record of another project is never visible: it is reported as not found.
    """

    async def get(self, project: str, response_id: str) -> StoredResponse:
        """Return one stored turn; raise ``ResponseNotFound`` if absent."""
        ...

    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        expected_previous_response_id: ExpectedParent = UNSET,
    ) -> None:
        """Write ``record`` after the save policy's checks, atomically with them."""
        ...

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        """Return the turns ending at ``response_id`` oldest first, and their items."""
        ...

    async def list_input_items(
        self,
        project: str,
        response_id: str,
        *,
        after: str | None = None,
        before: str | None = None,
        limit: int = 20,
        order: Order = "desc",
    ) -> ItemPage:
        """Page through one turn's own input items."""
        ...

    async def delete(self, project: str, response_id: str) -> None:
        """Delete one turn; raise ``ResponseNotFound`` if absent. Children are kept."""
        ...

    async def close(self) -> None:
        """Release connections and files."""
        ...
