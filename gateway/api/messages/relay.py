"""A Claude deployment's own answer, relayed to the Messages client as it came. Pure.

A turn whose request went to Claude as its client sent it (see
:mod:`gateway.upstream.wires.anthropic.passthrough`) carries the provider's answer or stream
events besides their Responses translation: the client gets those, with only ``model``
said as the client named it. A turn that another wire answered (a fallback) is translated
as any other (:class:`MessagesStream`). What the provider did not say, the gateway does:
a stream cut short, or failed before it began, ends with the open block closed and an
``error`` event of the type the failure has.
"""

from __future__ import annotations

from session import Item

from ...upstream.wires.anthropic.passthrough import RAW_EVENT, RAW_MESSAGE
from .stream import MessagesStream, stream_error_type

Out = tuple[str, Item]
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_EARLY = frozenset({"response.created", "response.in_progress"})


def passed_answer(kept: list[Item], model: str) -> Item | None:
    """The provider's own answer among a turn's events, if it was relayed."""
    for event in kept:
        if event.get("type") == RAW_MESSAGE and isinstance(event.get("message"), dict):
            return {**event["message"], "model": model}
    return None


class RelayedStream:
    """Feed it every event of the turn; it returns the Messages events to send."""

    def __init__(self, model: str, translated: MessagesStream) -> None:
        self._model = model
        self._translated = translated
        self._early: list[Item] = []  # the turn's first events, until the upstream's
        self._relaying: bool | None = None  # None: not known yet
        self._open: int | None = None  # the index of the relayed block still open
        self._done = False  # message_stop or an error relayed

    def event(self, event: Item) -> list[Out]:
        kind = event.get("type")
        if kind == RAW_EVENT:
            self._relaying = True
            self._early = []
            raw = event.get("event")
            return self._relay(raw) if isinstance(raw, dict) else []
        if self._relaying is None:
            if kind in _EARLY:
                self._early.append(event)
                return []
            self._relaying = False
            early, self._early = self._early, []
            return [out for each in [*early, event] for out in self._translated.event(each)]
        if not self._relaying:
            return self._translated.event(event)
        return self._end(event) if kind in _TERMINAL else []

    def _relay(self, raw: Item) -> list[Out]:
        if self._done:
            return []
        kind = str(raw.get("type") or "")
        if kind == "message_start" and isinstance(raw.get("message"), dict):
            raw = {**raw, "message": {**raw["message"], "model": self._model}}
        elif kind == "content_block_start":
            self._open = raw.get("index") if isinstance(raw.get("index"), int) else None
        elif kind == "content_block_stop":
            self._open = None
        elif kind in ("message_stop", "error"):
            self._done = True
        return [(kind, raw)]

    def _end(self, event: Item) -> list[Out]:
        """What the provider left unsaid when the turn ends."""
        if self._done or event.get("type") != "response.failed":
            return []
        self._done = True
        closing: list[Out] = []
        if self._open is not None:
            closing.append(
                ("content_block_stop", {"type": "content_block_stop", "index": self._open})
            )
        error = (event.get("response") or {}).get("error") or {}
        message = str(error.get("message") or "The model's answer failed.")
        failure = {"type": "error", "error": {"type": stream_error_type(error), "message": message}}
        return [*closing, ("error", failure)]
