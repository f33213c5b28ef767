"""An in-process store: fast, lost at exit, for tests and throwaway gateways."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from .chain import DEFAULT_MAX_DEPTH, assemble_chain
from .errors import ResponseNotFound
from .models import ChainTurn, ItemPage, ResolvedChain, StoredResponse
from .paging import Order, page_items
from .policy import UNSET, ExpectedParent, check_save

T = TypeVar("T")


class _Serialised(Mapping[str, T]):
    """Records kept as JSON, decoded afresh on each lookup (so callers share nothing)."""

    def __init__(self, serialised: dict[str, str], decode: Callable[[str], T]) -> None:
        self._serialised = serialised
        self._decode = decode

    def __getitem__(self, response_id: str) -> T:
        return self._decode(self._serialised[response_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._serialised)

    def __len__(self) -> int:
        return len(self._serialised)


def _chain_turn(serialised: str) -> ChainTurn:
    record = json.loads(serialised)
    return ChainTurn(
        record["id"],
        record["previous_response_id"],
        record["status"],
        record["request"]["input"],
        record["response"]["output"],
    )


class MemoryStore:
    """Keeps records serialised, so callers mutating what they saved or read change nothing.

    Every method runs without awaiting, so each is atomic on the event loop.
    """

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._max_depth = max_depth
        self._responses: dict[str, dict[str, str]] = {}

    def _project(self, project: str) -> _Serialised[StoredResponse]:
        return _Serialised(
            self._responses.setdefault(project, {}), StoredResponse.model_validate_json
        )

    def _find(self, project: str, response_id: str) -> StoredResponse:
        record = self._project(project).get(response_id)
        if record is None:
            raise ResponseNotFound(response_id)
        return record

    async def get(self, project: str, response_id: str) -> StoredResponse:
        return self._find(project, response_id)

    async def save(
        self,
        record: StoredResponse,
        *,
        overwrite: bool = False,
        expected_previous_response_id: ExpectedParent = UNSET,
    ) -> None:
        check_save(
            record,
            self._project(record.project).get(record.id),
            overwrite=overwrite,
            expected_previous_response_id=expected_previous_response_id,
        )
        self._responses[record.project][record.id] = record.model_dump_json()

    async def resolve_chain(self, project: str, response_id: str) -> ResolvedChain:
        turns = _Serialised(self._responses.get(project, {}), _chain_turn)
        return assemble_chain(response_id, turns, self._max_depth)

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
        items = self._find(project, response_id).request.input
        return page_items(items, after=after, before=before, limit=limit, order=order)

    async def delete(self, project: str, response_id: str) -> None:
        if self._responses.get(project, {}).pop(response_id, None) is None:
            raise ResponseNotFound(response_id)

    async def close(self) -> None:
        self._responses.clear()
