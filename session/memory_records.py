"""How the memory store keeps its records: serialised, decoded afresh on each read."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import orjson

from .conversations import fresh_items
from .models import ChainTurn, Item, normalise_input

T = TypeVar("T")


class Serialised(Mapping[str, T]):
    """Records kept as JSON, decoded afresh on each lookup (so callers share nothing)."""

    def __init__(self, serialised: dict[str, str], decode: Callable[[str], T]) -> None:
        self._serialised = serialised
        self._decode = decode

    def __getitem__(self, key: str) -> T:
        return self._decode(self._serialised[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._serialised)

    def __len__(self) -> int:
        return len(self._serialised)


def serialised_chain_turn(serialised: str) -> ChainTurn:
    record = orjson.loads(serialised)
    return ChainTurn(
        record["id"],
        record["previous_response_id"],
        record["status"],
        record["request"]["input"],
        record["response"]["output"],
        (record.get("metadata") or {}).get("route"),
    )


@dataclass
class ConversationState:
    record: str
    updated_at: float
    items: dict[str, str] = field(default_factory=dict)  # item id -> JSON, in append order

    def append(self, items: list[Item]) -> list[Item]:
        batch = normalise_input(items)
        stored = Serialised(self.items, json.loads)
        existing = {item["id"]: stored[item["id"]] for item in batch if item["id"] in stored}
        for item in fresh_items(batch, existing):
            self.items[item["id"]] = json.dumps(item)
            self.updated_at = time.time()
        return batch
