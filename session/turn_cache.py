"""Finished turns' contributions to chains, decoded once and kept in memory.

A finished turn never changes (the save policy refuses to overwrite one), so an entry
can only go stale by deletion, possibly by another process. The store keeps a deletion
generation that every delete of a turn raises (a trigger, so no path is missed): an
entry checked at the current generation is still stored, and only entries checked
before the last deletion cost an index lookup each. Continuing a deep chain therefore
reads one number, not one row per turn.

The chains resolved last are kept too: a turn continuing one of them (or its tip's
child, as an agent's next turn does) extends it by one turn, a copy of two lists,
instead of walking every turn again. A chain that must be walked is walked once per
process at a time: requests for it that arrive meanwhile (branches fanned out from a
chain not in memory) wait for that walk.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import replace
from typing import Protocol

from .chain import assemble_chain
from .errors import ChainTooDeep, ResponseNotFound
from .models import CONTINUABLE_STATUSES, ChainTurn, ResolvedChain, item_types

KEPT_CHAINS = 64


class ChainReads(Protocol):
    """What resolving a chain reads of a store."""

    async def deletion_generation(self) -> int:
        """The store's deletion generation (raised by every delete of a turn)."""
        ...

    async def existing_ids(self, project: str, ids: list[str]) -> set[str]:
        """Which of ``ids`` are still stored."""
        ...

    async def chain_turns(self, project: str, head: str, limit: int) -> list[ChainTurn]:
        """Up to ``limit`` turns of the chain that ends at ``head``, as one query."""
        ...


class TurnCache:
    """At most ``max_turns`` turns, the least recently used dropped first (0 turns it off).

    Callers share the cached item lists and must not change them.
    """

    def __init__(self, max_turns: int) -> None:
        self._max_turns = max_turns
        # (project, id) -> [turn, the deletion generation at which it was last known stored]
        self._turns: OrderedDict[tuple[str, str], tuple[ChainTurn, int]] = OrderedDict()
        self.generation = -1  # the newest deletion generation seen
        # (project, head) -> [the resolved chain, the generation it was resolved at]
        self._chains: OrderedDict[tuple[str, str], tuple[ResolvedChain, int]] = OrderedDict()
        # (project, head, generation) -> the walk of that chain under way
        self.walks: dict[tuple[str, str, int], _Walk] = {}

    def chain(self, project: str, head: str, generation: int) -> ResolvedChain | None:
        """The chain resolved at ``generation`` that ends at ``head``, if one is kept."""
        entry = self._chains.get((project, head))
        if entry is None or entry[1] != generation:
            return None
        self._chains.move_to_end((project, head))
        return entry[0]

    def keep_chain(self, project: str, chain: ResolvedChain, generation: int) -> None:
        if self._max_turns <= 0:
            return
        key = (project, chain.turns[-1].id)
        self._chains[key] = (chain, generation)
        self._chains.move_to_end(key)
        while len(self._chains) > KEPT_CHAINS:
            self._chains.popitem(last=False)

    def put(self, project: str, turn: ChainTurn, checked: int | None = None) -> None:
        """Keep ``turn``, known stored at generation ``checked`` (a new turn: the newest seen)."""
        if self._max_turns <= 0 or turn.status not in CONTINUABLE_STATUSES:
            return
        key = (project, turn.id)
        self._turns[key] = (turn, self.generation if checked is None else checked)
        self._turns.move_to_end(key)
        while len(self._turns) > self._max_turns:
            self._turns.popitem(last=False)

    def get(self, project: str, response_id: str) -> tuple[ChainTurn, int] | None:
        return self._turns.get((project, response_id))

    def discard(self, project: str, response_id: str) -> None:
        self._turns.pop((project, response_id), None)

    def walk(
        self, project: str, head: str, max_depth: int
    ) -> tuple[dict[str, tuple[ChainTurn, int]], str | None]:
        """The cached turns from ``head`` towards the root, and the first id not cached."""
        turns: dict[str, tuple[ChainTurn, int]] = {}
        current: str | None = head
        while current is not None and current not in turns and len(turns) <= max_depth:
            entry = self._turns.get((project, current))
            if entry is None:
                return turns, current
            turns[current] = entry
            current = entry[0].previous_response_id
        return turns, None


async def resolve_cached(
    cache: TurnCache, store: ChainReads, project: str, head: str, max_depth: int
) -> ResolvedChain:
    """Resolve the chain ending at ``head``: cached turns first, the rest from ``store``."""
    now = await store.deletion_generation()
    cache.generation = max(cache.generation, now)
    source = "cache"
    chain = cache.chain(project, head, now)
    if chain is None:
        source = "extended"
        chain = await _extended(cache, store, project, head, now)
    if chain is None:
        source = "store"
        key = (project, head, now)
        walk = cache.walks.get(key)
        if walk is None:  # else another request walks this chain already: wait for it
            task = asyncio.create_task(_walked(cache, store, project, head, max_depth, now))
            walk = cache.walks[key] = _Walk(task)
            task.add_done_callback(lambda _: cache.walks.pop(key, None))
            task.add_done_callback(_retrieved)
        chain = await walk.joined()
    if len(chain.turns) > max_depth:
        raise ChainTooDeep(head, max_depth)
    cache.keep_chain(project, chain, now)
    return chain if source == chain.source else replace(chain, source=source)


class _Walk:
    """A walk of one chain and how many callers wait for it; the last to leave stops it."""

    def __init__(self, task: asyncio.Task[ResolvedChain]) -> None:
        self.task = task
        self.waiting = 0

    async def joined(self) -> ResolvedChain:
        self.waiting += 1
        try:
            return await asyncio.shield(self.task)  # one caller gone leaves the others theirs
        except asyncio.CancelledError:
            if self.waiting == 1:
                self.task.cancel()
            raise
        finally:
            self.waiting -= 1


def _retrieved(task: asyncio.Task[ResolvedChain]) -> None:
    if not task.cancelled():
        task.exception()  # its callers have it (or are gone)


async def _extended(
    cache: TurnCache, store: ChainReads, project: str, head: str, now: int
) -> ResolvedChain | None:
    """The kept chain of ``head``'s parent with ``head`` added, if both are cached."""
    turn, checked = cache.get(project, head) or (None, now)
    if turn is None or turn.previous_response_id is None:
        return None
    parent = cache.chain(project, turn.previous_response_id, now)
    if parent is None:
        return None
    if checked < now:
        if head not in await store.existing_ids(project, [head]):
            cache.discard(project, head)
            raise ResponseNotFound(head)
        cache.put(project, turn, now)
    own = [*turn.input, *turn.output]
    return ResolvedChain(
        turns=[*parent.turns, turn],
        items=[*parent.items, *own],
        types=parent.types | item_types(own),
    )


async def _walked(
    cache: TurnCache, store: ChainReads, project: str, head: str, max_depth: int, now: int
) -> ResolvedChain:
    """The chain walked turn by turn, through the cache and then the store."""
    entries, first_missing = cache.walk(project, head, max_depth)
    unchecked = [response_id for response_id, (_, checked) in entries.items() if checked < now]
    if unchecked:
        stored = await store.existing_ids(project, unchecked)
        for response_id in unchecked:
            if response_id in stored:
                entries[response_id] = (entries[response_id][0], now)
            else:
                del entries[response_id]
                cache.discard(project, response_id)
    if first_missing is not None:
        for turn in await store.chain_turns(project, first_missing, max_depth + 1 - len(entries)):
            entries[turn.id] = (turn, now)
    chain = assemble_chain(head, {key: turn for key, (turn, _) in entries.items()}, max_depth)
    # Oldest first, so the head ends the most recently used: a chain longer than the
    # cache loses its oldest turns, and the miss costs a short read near the root.
    for turn in chain.turns:
        cache.put(project, turn, entries[turn.id][1])
    return chain
