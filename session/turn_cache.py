"""Finished turns' contributions to chains, decoded once and kept in memory.

A finished turn never changes (the save policy refuses to overwrite one), so an entry
can only go stale by deletion, possibly by another process: a store that answers from
the cache checks that the cached turns still exist, which costs an index lookup per turn
instead of reading and decoding each turn's JSON again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from .chain import assemble_chain
from .models import CONTINUABLE_STATUSES, ChainTurn, ResolvedChain


class TurnCache:
    """At most ``max_turns`` turns, the least recently used dropped first (0 turns it off).

    Callers share the cached item lists and must not change them.
    """

    def __init__(self, max_turns: int) -> None:
        self._max_turns = max_turns
        self._turns: OrderedDict[tuple[str, str], ChainTurn] = OrderedDict()

    def get(self, project: str, response_id: str) -> ChainTurn | None:
        turn = self._turns.get((project, response_id))
        if turn is not None:
            self._turns.move_to_end((project, response_id))
        return turn

    def put(self, project: str, turn: ChainTurn) -> None:
        if self._max_turns <= 0 or turn.status not in CONTINUABLE_STATUSES:
            return
        self._turns[(project, turn.id)] = turn
        self._turns.move_to_end((project, turn.id))
        while len(self._turns) > self._max_turns:
            self._turns.popitem(last=False)

    def discard(self, project: str, response_id: str) -> None:
        self._turns.pop((project, response_id), None)

    def walk(
        self, project: str, head: str, max_depth: int
    ) -> tuple[dict[str, ChainTurn], str | None]:
        """The cached turns from ``head`` towards the root, and the first id not cached."""
        turns: dict[str, ChainTurn] = {}
        current: str | None = head
        while current is not None and current not in turns and len(turns) <= max_depth:
            turn = self.get(project, current)
            if turn is None:
                return turns, current
            turns[current] = turn
            current = turn.previous_response_id
        return turns, None


async def resolve_cached(
    cache: TurnCache,
    project: str,
    head: str,
    max_depth: int,
    *,
    existing: Callable[[list[str]], Awaitable[set[str]]],
    fetch: Callable[[str, int], Awaitable[list[ChainTurn]]],
) -> ResolvedChain:
    """Resolve the chain ending at ``head``: cached turns first, the rest from the store.

    ``existing(ids)`` returns which of the ids are still stored; ``fetch(id, limit)``
    reads up to ``limit`` turns of the chain that ends at ``id``, as one query.
    """
    turns, first_missing = cache.walk(project, head, max_depth)
    if turns:
        for gone in set(turns) - await existing(list(turns)):
            del turns[gone]
            cache.discard(project, gone)
    if first_missing is not None:
        for turn in await fetch(first_missing, max_depth + 1 - len(turns)):
            turns[turn.id] = turn
            cache.put(project, turn)
    return assemble_chain(head, turns, max_depth)
