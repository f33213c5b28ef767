"""The Messages fields only Claude's API acts on (``top_k``, ``context_management`` and any
field the gateway does not read, such as ``container``), checked
for a model no deployment of which is on the ``anthropic`` wire. Pure.

A Claude model gets them as sent (see :mod:`gateway.upstream.wires.anthropic.passthrough`).
Another model cannot do what they ask: the Chat Completions and Responses APIs have no
``top_k``, and the context edits are Claude's API's own work on the request. So they are a
400, never dropped, save the one edit that asks for nothing: ``clear_thinking_20251015``
keeping every thinking block, which a translated model gets back anyway. A refused edit
is worded as Anthropic words it for a model without that strategy
(``MODEL does not support the 'TYPE' context management strategy``), the message Claude
Code reads to send the conversation again without that edit.
"""

from __future__ import annotations

from typing import Any

from ...errors import invalid_request
from .body import MessagesBody, invalid

_KEEPS_EVERYTHING = ("clear_thinking_20251015", "all")
# Fields the gateway does not read that ask nothing of the answer: a capacity tier and
# Claude's own prompt caching, which a translated model is not offered.
_NO_EFFECT = frozenset({"service_tier", "cache_control"})


def _edit_asks_nothing(edit: Any) -> bool:
    return isinstance(edit, dict) and (edit.get("type"), edit.get("keep")) == _KEEPS_EVERYTHING


def check_translatable(body: MessagesBody, wire: str) -> None:
    """A 400 for the first field ``body`` asks of its model (served on ``wire``, not
    Claude's) that the model cannot do."""
    if body.top_k is not None:
        raise invalid(
            "top_k",
            f"not supported for model '{body.model}' (served on the {wire} wire, which has "
            "no top_k); only a Claude model takes it",
        )
    extra = body.model_extra or {}
    for field in sorted(set(extra) - _NO_EFFECT - {"context_management"}):
        raise invalid(
            field,
            f"not supported for model '{body.model}' (served on the {wire} wire); "
            "only a Claude model takes it",
        )
    managed = extra.get("context_management")
    if managed is None:
        return
    edits = managed.get("edits") if isinstance(managed, dict) else None
    if not isinstance(edits, list):
        raise invalid("context_management.edits", "Field required")
    for index, edit in enumerate(edits):
        if _edit_asks_nothing(edit):
            continue
        kind = edit.get("type") if isinstance(edit, dict) else None
        raise invalid_request(
            f"{body.model} does not support the '{kind}' context management strategy "
            f"(served on the {wire} wire; only a Claude model runs context edits)",
            param=f"context_management.edits.{index}",
        )
