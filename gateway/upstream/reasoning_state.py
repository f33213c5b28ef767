"""The opaque state a provider needs back on the next turn, sealed into a ``reasoning`` item.

Anthropic must receive its thinking blocks, signatures included, exactly as it sent them;
another model must never receive them ("Invalid signature"). An adapter that gets such
state puts it in the reasoning item's ``encrypted_content``, sealed by the gateway (see
:mod:`gateway.sealing`) with the provider and model it came from; the item then carries it
through the store and through stateless clients alike. On the way back, state sealed for
this project and this origin opens; any other is dropped, and the visible text still goes.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..sealing import REASONING_PREFIX, Sealer
from .results import Item


class ReasoningState:
    """Seals and opens one origin's state (``provider/model``) for one project."""

    def __init__(self, sealer: Sealer, project: str, origin: str) -> None:
        self._sealer = sealer
        self._project = project
        self.origin = origin

    def seal(self, state: Item) -> str:
        text = orjson.dumps({"origin": self.origin, "state": state}).decode()
        return self._sealer.seal(self._project, text, REASONING_PREFIX)

    def open(self, token: Any) -> Item | None:
        """The state ``token`` holds if it was sealed here for this project and origin."""
        if not isinstance(token, str):
            return None
        text = self._sealer.open(self._project, token, REASONING_PREFIX)
        if text is None:
            return None
        sealed = orjson.loads(text)
        return sealed["state"] if sealed.get("origin") == self.origin else None
