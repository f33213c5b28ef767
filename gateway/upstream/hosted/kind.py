"""A tool the gateway runs, as one kind: what the model is offered, how a call runs, its
items and events, how its items read back on a later turn.

The loop (:mod:`.run`) knows no kind: it offers each kind's functions, hands each call of
one of them to its kind, and tells the model what the kind answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..results import Event, Item

Emit = Callable[..., None]  # takes events; drops them when the turn is not streamed


class Kind(Protocol):
    """One kind of tool the gateway runs for a turn (its settings and the request's tool
    already read)."""

    label: str  # in words: "web search"
    tool_types: frozenset[str]  # the request's tools of this kind (taken out of ``tools``)

    def functions(self) -> list[Item]:
        """The functions the model is offered for this kind."""
        ...

    def owns(self, name: str) -> bool:
        """Whether the function ``name`` is one of this kind's."""
        ...

    def choice(self, tool_choice: object) -> str | None:
        """The function a ``tool_choice`` naming this kind's tool stands for, else ``None``."""
        ...

    def read_back(self, items: list[Item]) -> list[Item]:
        """The input with this kind's items as the model reads them."""
        ...

    def start(self, name: str) -> Item:
        """The output item standing for a call of ``name``, in progress."""
        ...

    def started(self, at: int, item: Item) -> list[Event]:
        """The events after the item's ``response.output_item.added``."""
        ...

    async def run(self, at: int, item: Item, arguments: str, seconds: float, emit: Emit) -> str:
        """Run the call within ``seconds``, complete its item (and its events, the last its
        ``response.output_item.done``); what the model is told."""
        ...

    def refuse(self, at: int, item: Item, why: str, emit: Emit) -> str:
        """End the call unrun (``why`` in words); what the model is told."""
        ...

    def annotations(self, text: str) -> list[Item]:
        """The annotations the answer's ``text`` earns (citations), in text order."""
        ...
