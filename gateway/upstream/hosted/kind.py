"""A tool the gateway runs, as one kind: what the model is offered, what a turn sets up
first, how a call runs, its items and events, how its items read back on a later turn.

The loop (:mod:`.run`) knows no kind: it reads the input back through each kind, lets each
set up its turn, offers each kind's functions, hands each call of one of them to its kind,
and tells the model what the kind answered.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Protocol

from ..results import Event, Item

Emit = Callable[..., None]  # takes events; drops them when the turn is not streamed


@dataclass
class Call:
    """A call of one of a kind's functions, as its kind took it."""

    item: Item  # the output item standing for it
    counted: bool = True  # it counts towards ``max_tool_calls`` (and then runs)
    waits: bool = False  # it is not run: the turn ends for the client to answer it


class Turn(Protocol):
    """What a kind reads and changes of its turn while setting it up."""

    stream: bool
    seconds: float  # the turn's time for tools
    output: list[Item]
    model_input: list[Item]
    planned: int  # the calls counted towards ``max_tool_calls`` so far

    def emit(self, *events: Event) -> None: ...

    def remaining(self) -> float: ...


class Kind(Protocol):
    """One kind of tool the gateway runs for a turn (its settings and the request's tool
    already read)."""

    label: str  # in words: "web search"
    tool_types: frozenset[str]  # the request's tools of this kind (taken out of ``tools``)
    max_turn_seconds: float  # a turn with this kind ends within this (the least of its kinds')

    async def check(self) -> None:
        """The 400s the request earns for this kind, before anything is stored."""
        ...

    def read_back(self, items: list[Item]) -> list[Item]:
        """The input with this kind's items as the model reads them."""
        ...

    async def open(self, turn: Turn, stack: AsyncExitStack) -> str | None:
        """Set the turn up before the model is called (what it needs held open goes on
        ``stack``); the message of a failure that ends the turn, else ``None``. A failure
        the client gets as an HTTP error (unstreamed) is raised."""
        ...

    def functions(self) -> list[Item]:
        """The functions the model is offered for this kind."""
        ...

    def owns(self, name: str) -> bool:
        """Whether the function ``name`` is one of this kind's."""
        ...

    def choice(self, tool_choice: object) -> object | None:
        """The ``tool_choice`` the model is sent, while the functions are offered, for one
        naming this kind's tool (``None``: ``auto``)."""
        ...

    def start(self, name: str) -> Call:
        """A call of ``name``: its output item, in progress."""
        ...

    def started(self, at: int, item: Item) -> list[Event]:
        """The events after the item's ``response.output_item.added``."""
        ...

    def relay(self, at: int, item: Item, event: Event) -> list[Event]:
        """The events to send for one of the model's streamed events of the call."""
        ...

    def settled(self, at: int, item: Item, arguments: str) -> list[Event]:
        """Take the call's arguments as the model's answer holds them; the events a stream
        that did not show the call's own events would have sent by now."""
        ...

    async def run(self, at: int, item: Item, arguments: str, seconds: float, emit: Emit) -> str:
        """Run the call within ``seconds``, complete its item (and its events, the last its
        ``response.output_item.done``); what the model is told."""
        ...

    def annotations(self, text: str) -> list[Item]:
        """The annotations the answer's ``text`` earns (citations), in text order."""
        ...
