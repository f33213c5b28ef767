"""Thinking blocks as ``/v1/messages`` hands them out and reads them back.

A Claude model on the ``anthropic`` wire keeps its own blocks: its reasoning items seal them
(:mod:`gateway.upstream.reasoning_state`), and they go to the client as they came, Claude's
signature included; sent back, they are sealed again for each of the model's Anthropic
deployments. Any other model's reasoning item becomes one thinking block whose signature the
gateway seals (``gwt1.``), holding the whole item and the model it came from: sent back to
that model, the item is restored as it was; sent to another model, the block is left out, as
another model cannot read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from session import Item, new_item_id

from ...sealing import REASONING_PREFIX, THINKING_PREFIX, Sealer
from ...upstream.reasoning_state import ReasoningState
from .body import invalid

Block = dict[str, Any]


def reasoning_text(item: Item) -> str:
    """The visible text of a reasoning item: its reasoning text, else its summary."""
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            text = "".join(str(part.get("text") or "") for part in parts if isinstance(part, dict))
            if text:
                return text
    return ""


class ThinkingSeals:
    """Seals and opens the thinking blocks of one project's requests for one model."""

    def __init__(
        self, sealer: Sealer, project: str, model: str, claude_deployments: Sequence[str]
    ) -> None:
        """``claude_deployments``: the model's deployments on the ``anthropic`` wire."""
        self._sealer = sealer
        self._project = project
        self._model = model
        self._claude = list(claude_deployments)

    def blocks(self, item: Item) -> list[Block]:
        """The thinking blocks of one output reasoning item."""
        claude = self._claude_blocks(item.get("encrypted_content"))
        if claude is not None:
            return claude
        kept = {key: value for key, value in item.items() if key not in ("id", "status")}
        sealed = orjson.dumps({"model": self._model, "item": kept}).decode()
        signature = self._sealer.seal(self._project, sealed, THINKING_PREFIX)
        return [{"type": "thinking", "thinking": reasoning_text(item), "signature": signature}]

    def _claude_blocks(self, token: Any) -> list[Block] | None:
        if not isinstance(token, str):
            return None
        text = self._sealer.open(self._project, token, REASONING_PREFIX)
        if text is None:
            return None
        state = orjson.loads(text).get("state")
        blocks = state.get("blocks") if isinstance(state, dict) else None
        return [dict(block) for block in blocks] if isinstance(blocks, list) else None

    def items(self, block: Block, param: str) -> list[Item]:
        """The reasoning items a thinking block sent back stands for (none if it is
        another model's); a 400 for a gateway signature that does not open."""
        signature = block.get("signature")
        if isinstance(signature, str) and signature.startswith(THINKING_PREFIX):
            text = self._sealer.open(self._project, signature, THINKING_PREFIX)
            if text is None:
                raise invalid(param, "Invalid `signature` in `thinking` block")
            sealed = orjson.loads(text)
            if sealed.get("model") != self._model:
                return []
            return [{**sealed["item"], "id": new_item_id("reasoning")}]
        # Claude's own block: only a Claude deployment of this model can read it.
        return [
            {
                "type": "reasoning",
                "id": new_item_id("reasoning"),
                "summary": [],
                "encrypted_content": ReasoningState(self._sealer, self._project, deployment).seal(
                    {"blocks": [block]}
                ),
            }
            for deployment in self._claude
        ]
