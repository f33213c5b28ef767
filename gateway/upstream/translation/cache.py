"""Earlier requests' contexts, kept per provider with what the gateway made of them.

The next turn of a chain, or another branch from the same turn, sends a context again
plus its own items: what was made of the kept context (chat messages, JSON) is reused
and only those items are worked on. A context is kept up to the model's last answer, the
part its next turns and its branches share. A kept context is matched by value (list
equality, instant for the very same item objects a chain's cache hands out), so a match
is always correct.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import orjson

from ..results import Item

T = TypeVar("T")

_ANSWER_TYPES = frozenset({"function_call", "custom_tool_call", "reasoning"})
LARGE_RUN_BYTES = 64 * 1024  # a run of encoded items sent as a piece of its own


def answer_end(items: list[Item]) -> int:
    """The length of ``items`` up to their last item of a model's answer (0: none)."""
    for end in range(len(items), 0, -1):
        item = items[end - 1]
        if item.get("type") in _ANSWER_TYPES or item.get("role") == "assistant":
            return end
    return 0


@dataclass(frozen=True)
class Kept(Generic[T]):
    items: list[Item]
    made: T  # what was made of the items
    tag: str = ""  # what else it was made for: only a request for the same may reuse it


class KeptContexts(Generic[T]):
    """The last ``max_entries`` contexts, ``max_items`` items in all. Contexts shorter than
    ``min_items`` cost less to work on again than to look up, and are not kept."""

    def __init__(self, max_entries: int = 16, max_items: int = 100_000, min_items: int = 8) -> None:
        self.max_items = max_items
        self.min_items = min_items
        self._max_entries = max_entries
        self._entries: OrderedDict[int, Kept[T]] = OrderedDict()
        self._next_key = 0
        self._held = 0  # items in all entries

    def longest_prefix(self, items: list[Item], most: int, tag: str = "") -> Kept[T] | None:
        """The longest kept context that ``items`` start with, at most ``most`` long, kept
        with ``tag``.

        Longest first, so a match ends the search: comparing a prefix costs little for the
        very same item objects, but a deep comparison of each item for equal ones (a chain
        read from the store again). A context matched by equal objects then keeps those.
        """
        ranked = sorted(
            self._entries.items(), key=lambda entry: (len(entry[1].items), entry[0]), reverse=True
        )
        for key, entry in ranked:
            size = len(entry.items)
            if (
                size <= most
                and entry.tag == tag
                and items[size - 1] == entry.items[-1]
                and items[:size] == entry.items
            ):
                if items[size - 1] is not entry.items[-1]:  # equal objects, not the same:
                    entry = replace(entry, items=items[:size])  # the next match is by identity
                    self._entries[key] = entry
                self._entries.move_to_end(key)
                return entry
        return None

    def keep(self, items: list[Item], made: T, tag: str = "") -> None:
        """Keep ``items`` (a list of their own) and what was made of them, within budget."""
        if len(items) > self.max_items:
            return
        self._entries[self._next_key] = Kept(items, made, tag)
        self._next_key += 1
        self._held += len(items)
        while len(self._entries) > self._max_entries or self._held > self.max_items:
            _, dropped = self._entries.popitem(last=False)
            self._held -= len(dropped.items)

    def kept_items(self) -> int:
        return self._held


class EncodedInputs:
    """Earlier requests' input items as JSON, for an upstream that takes the items
    themselves (a Responses API): a chain's next turn encodes only its own items."""

    def __init__(self, max_entries: int = 16, max_items: int = 100_000, min_items: int = 8) -> None:
        self._kept = KeptContexts[bytes](max_entries, max_items, min_items)

    def encode(
        self, items: list[Item], encode: Callable[[list[Item]], bytes], tag: str = ""
    ) -> list[bytes]:
        """``items`` as ``encode`` makes them (runs of comma-separated JSON values, for
        :func:`object_with_array`), reusing the encoding of a kept context they start with
        that was made for the same ``tag`` (the account: what it may replay differs)."""
        context = answer_end(items)
        if context < self._kept.min_items:
            return [encode(items)]
        done = self._kept.longest_prefix(items, context, tag)
        head, start = (done.made, len(done.items)) if done else (b"", 0)
        if start < context:
            head = joined(head, encode(items[start:context]))
            self._kept.keep(items[:context], head, tag)
        return [head, encode(items[context:])]

    def kept_items(self) -> int:
        return self._kept.kept_items()


def object_with_array(fields: dict[str, Any], key: str, runs: list[bytes]) -> list[bytes]:
    """``fields`` as a JSON object ending with ``key``: an array of the values in ``runs``
    (comma-separated JSON values already encoded; empty runs are skipped).

    The object comes as pieces whose concatenation is its JSON: a run of
    ``LARGE_RUN_BYTES`` or more is a piece of its own, so a long kept context goes to the
    upstream from where it is kept, never copied; what lies around such runs is joined.
    """
    pieces: list[bytes] = []
    small = [orjson.dumps(fields)[:-1], b"," if fields else b"", orjson.dumps(key), b":["]
    separator = b""
    for run in runs:
        if not run:
            continue
        small.append(separator)
        separator = b","
        if len(run) < LARGE_RUN_BYTES:
            small.append(run)
        else:
            pieces += (b"".join(small), run)
            small = []
    small.append(b"]}")
    pieces.append(b"".join(small))
    return pieces


def joined(first: bytes, second: bytes) -> bytes:
    """Two comma-separated runs of JSON values as one (either may be empty), copied once."""
    return b",".join((first, second)) if first and second else first or second
