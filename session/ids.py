"""Identifiers in OpenAI's style: a type prefix and 192 random bits."""

from __future__ import annotations

import secrets

ITEM_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
}


def new_id(prefix: str) -> str:
    """Return ``prefix_`` followed by 48 random hex digits."""
    return f"{prefix}_{secrets.token_hex(24)}"


def new_item_id(item_type: str) -> str:
    """Return a fresh id for an item of ``item_type`` (``msg_…``, ``fc_…``, ``rs_…``, …)."""
    return new_id(ITEM_PREFIXES.get(item_type, "item"))
