"""Chain resolution shared by every backend: stored turns -> upstream input items."""

from __future__ import annotations

from collections.abc import Mapping

from .errors import (
    ChainAncestorMissing,
    ChainCycle,
    ChainTooDeep,
    ResponseNotFound,
    TurnNotContinuable,
)
from .models import (
    CONTINUABLE_STATUSES,
    ChainTurn,
    Item,
    ResolvedChain,
    StoredResponse,
    item_types,
)

DEFAULT_MAX_DEPTH = 10_000


def chain_turn(record: StoredResponse) -> ChainTurn:
    """What ``record`` contributes to the chains that pass through it."""
    return ChainTurn(
        record.id,
        record.previous_response_id,
        record.status,
        record.request.input,
        record.response.output,
        _route(record.metadata.get("route")),
    )


def _route(value: object) -> Item | None:
    return value if isinstance(value, dict) else None


def assemble_chain(
    head_id: str, records: Mapping[str, ChainTurn], max_depth: int = DEFAULT_MAX_DEPTH
) -> ResolvedChain:
    """Walk parent links from ``head_id`` through ``records`` and build the chain.

    ``records`` holds at least every turn of the chain (a backend fetches them in one
    query); a link to an id absent from it is a missing ancestor. Each turn contributes
    its request input items then its response output items; instructions never do.
    """
    turns: list[ChainTurn] = []
    seen: set[str] = set()
    current: str | None = head_id
    while current is not None:
        if current in seen:
            raise ChainCycle(current)
        if len(turns) >= max_depth:
            raise ChainTooDeep(head_id, max_depth)
        record = records.get(current)
        if record is None:
            if current == head_id:
                raise ResponseNotFound(head_id)
            raise ChainAncestorMissing(current)
        if record.status not in CONTINUABLE_STATUSES:
            raise TurnNotContinuable(record.id, record.status)
        seen.add(current)
        turns.append(record)
        current = record.previous_response_id
    turns.reverse()
    items: list[Item] = []
    for turn in turns:
        items.extend(turn.input)
        items.extend(turn.output)
    return ResolvedChain(turns=turns, items=items, types=item_types(items))
