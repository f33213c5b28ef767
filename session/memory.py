"""An in-process store: fast, lost at exit, for tests and throwaway gateways."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .chain import DEFAULT_MAX_DEPTH, assemble_chain
from .errors import ResponseNotFound
from .models import ItemPage, ResolvedChain, StoredResponse
from .paging import Order, page_items
from .policy import UNSET, ExpectedParent, check_save


class _Decoded(Mapping[str, StoredResponse]):
    """Serialised records read as fresh objects, decoding only the ones looked up."""

    def __init__(self, serialised: dict[str, str]) -> None:
        self._serialised = serialised

    def __getitem__(self, response_id: str) -> StoredResponse:
        return StoredResponse.model_validate_json(self._serialised[response_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._serialised)

    def __len__(self) -> int:
        return len(self._serialised)


class MemoryStore:
    """Keeps records serialised, so callers mutating what they saved or read change nothing.

    Every method runs without awaiting, so each is atomic on the event loop.
    """

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._max_depth = max_depth
        self._responses: dict[str, dict[str, str]] = {}

    def _project(self, project: str) -> _Decoded:
        return _Decoded(self._responses.setdefault(project, {}))

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
        return assemble_chain(response_id, self._project(project), self._max_depth)

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
