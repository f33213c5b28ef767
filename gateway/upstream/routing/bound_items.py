"""Items only the account that made them can replay, bound to that account.

A Responses upstream hands back state that only the same account (its provider and API
key) can read again: a ``reasoning`` item's ``encrypted_content``, a ``compaction``
item's, a ``program`` item's ``fingerprint``. Another account refuses it. The adapter
seals that state (:class:`gateway.upstream.reasoning_state.ReasoningState`) with the
account as its origin, so that the item carries its binding through the store and through
stateless clients alike. On the way out, state sealed for the same account opens into the
upstream's own again; an item whose state is another's is dropped (with its
``program_output``), never sent, and the drop is logged. Routing reads the origin of a
request's newest sealed item (:func:`bound_origin`) and tries first the deployments and
keys that can replay it.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import orjson

from ...config import Route
from ...sealing import COMPACTION_PREFIX, REASONING_PREFIX, Sealer
from ..reasoning_state import ReasoningState
from ..results import Item

logger = logging.getLogger(__name__)

# The field of each item type that holds state only its account can read.
BOUND_FIELDS = {
    "reasoning": "encrypted_content",
    "compaction": "encrypted_content",
    "program": "fingerprint",
}


def account_origin(route: Route, key: str | None) -> str:
    """The origin a Responses upstream's state is sealed with: its provider and a digest
    of the key it was sent with (never the key itself), so keys may be reordered."""
    secret = key if key is not None else route.provider.api_key
    digest = hashlib.sha256(secret.encode()).hexdigest()[:16] if secret else "-"
    return f"account:{route.provider_name}#{digest}"


def origin_of(route: Route, key: str | None) -> str:
    """The origin whose sealed state an adapter for ``route`` (sent with ``key``) opens:
    a Responses upstream's account, else the deployment (a model's thinking blocks)."""
    if route.provider.wire.account_bound:
        return account_origin(route, key)
    return route.deployment


def _sealed(item: Item) -> str | None:
    field = BOUND_FIELDS.get(str(item.get("type")))
    token = item.get(field) if field else None
    return token if isinstance(token, str) and token.startswith(REASONING_PREFIX) else None


def bound_origin(sealer: Sealer, project: str, items: list[Item]) -> str | None:
    """The origin of the newest item of ``items`` whose state the gateway sealed (``None``
    if none has any): the deployment or account that can replay it."""
    for item in reversed(items):
        token = _sealed(item)
        if token is None:
            continue
        text = sealer.open(project, token, REASONING_PREFIX)
        if text is not None:
            origin = orjson.loads(text).get("origin")
            return origin if isinstance(origin, str) else None
    return None


def bind(item: Item, state: ReasoningState) -> Item:
    """``item`` with its account-bound state sealed for ``state``'s origin (unchanged if it
    holds none, or holds the gateway's own)."""
    field = BOUND_FIELDS.get(str(item.get("type")))
    value = item.get(field) if field else None
    if field is None or not isinstance(value, str) or value.startswith(REASONING_PREFIX):
        return item
    if item["type"] == "compaction" and value.startswith(COMPACTION_PREFIX):
        return item  # the gateway's own compaction, opened before any upstream sees it
    return {**item, field: state.seal({field: value})}


def replayable(items: list[Item], state: ReasoningState | None) -> list[Item]:
    """``items`` as ``state``'s account may receive them: its own sealed state opened, every
    item with another's dropped (and the output of a dropped ``program``), and logged."""
    kept: list[Item] = []
    dropped: dict[str, int] = {}
    programs: set[Any] = set()
    for item in items:
        token = _sealed(item)
        if token is None:
            if item.get("type") == "program_output" and item.get("call_id") in programs:
                dropped["program_output"] = dropped.get("program_output", 0) + 1
                continue
            kept.append(item)
            continue
        opened = state.open(token) if state is not None else None
        field = BOUND_FIELDS[item["type"]]
        if opened is not None and isinstance(opened.get(field), str):
            kept.append({**item, field: opened[field]})
            continue
        dropped[item["type"]] = dropped.get(item["type"], 0) + 1
        if item["type"] == "program":
            programs.add(item.get("call_id"))
    if dropped:
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(dropped.items()))
        where = state.origin.split("#")[0] if state is not None else "this upstream"
        logger.info(
            "dropped %s item(s) made by another account or model: %s cannot replay them",
            counts,
            where,
        )
    return kept
