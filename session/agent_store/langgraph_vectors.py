"""The vectors of LangGraph store items, for ``search(query=...)``.

The adapter embeds an item's indexed fields when it puts the item and sends the vectors
with it (little-endian float32 in base64, as OpenAI encodes embeddings); a search sends its
query's vector. They are kept as the Files index keeps its chunks' (float32 scaled to unit
length) and ranked by its exact cosine ranking: an item scores its best field's similarity.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..files.models import Candidate, SearchQuery
from ..files.ranking import rank, vector_bytes
from ..sql import Operation, Statement, rows, run, run_many
from .errors import bad_request
from .values import check_key

ITEM = "project = :project AND namespace = :namespace AND path = :path AND key = :key"
MAX_DIMENSIONS = 16384


def decode(value: Any, name: str) -> bytes:
    """A vector sent as base64 float32, as kept: BadRequest naming ``name`` unless it is one."""
    try:
        raw = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        raw = b""
    if not raw or len(raw) % 4 or len(raw) // 4 > MAX_DIMENSIONS:
        raise bad_request(
            f"{name} is a vector: 1 to {MAX_DIMENSIONS} float32 values, little-endian, in base64."
        )
    array = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(array).all():
        raise bad_request(f"{name} holds a value that is not a finite number.")
    return vector_bytes(array.tolist())


def fields(value: Any) -> list[tuple[str, bytes]]:
    """A put's ``vectors`` (``[{"field", "vector"}]``, one per indexed field) checked."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(part, dict) for part in value):
        raise bad_request("vectors is a list of {field, vector} objects.")
    kept: dict[str, bytes] = {}
    for part in value:
        field = check_key(part.get("field"), "vectors.field", empty=True)
        kept[field] = decode(part.get("vector"), "vectors.vector")
    return list(kept.items())


def replace(where: dict[str, Any], vectors: list[tuple[str, bytes]]) -> Iterator[Statement]:
    """The statements that make ``vectors`` the item's only ones (none: it has none)."""
    yield run(f"DELETE FROM lg_item_vectors WHERE {ITEM}", **where)
    if vectors:
        yield run_many(
            "INSERT INTO lg_item_vectors (project, namespace, path, key, field, vector)"
            " VALUES (:project, :namespace, :path, :key, :field, :vector)",
            [{**where, "field": field, "vector": vector} for field, vector in vectors],
        )


def under(project: str, namespace: str, clause: str, params: dict[str, Any]) -> Operation:
    """The vectors of the items whose path the ``clause`` (on ``path``) keeps, by item."""
    found = yield rows(
        "SELECT path, key, vector FROM lg_item_vectors"
        f" WHERE project = :project AND namespace = :namespace{clause}",
        project=project,
        namespace=namespace,
        **params,
    )
    kept: dict[tuple[str, str], list[bytes]] = {}
    for path, key, vector in found:
        kept.setdefault((path, key), []).append(bytes(vector))
    return kept


def ranked(
    keys: list[tuple[str, str]], vectors: dict[tuple[str, str], list[bytes]], query: bytes
) -> list[tuple[int, float | None]]:
    """The positions of ``keys`` with their scores: the items with vectors (of the query's
    length) by their best cosine similarity, highest first (ties: in order), then the others
    in order, unscored, as LangGraph's ``InMemoryStore`` lists them."""
    # The Files ranking's candidates: an item's position stands in a chunk's.
    pairs = [(n, vector) for n, key in enumerate(keys) for vector in vectors.get(key, [])]
    candidates = [
        Candidate(number, "", "", "", position, "", vector, {})
        for number, (position, vector) in enumerate(pairs)
    ]
    hits = rank(candidates, SearchQuery("", query, limit=len(candidates)), [])
    scores: dict[int, float] = {}
    for hit in hits:
        scores.setdefault(hit.position, hit.score)
    unscored = [(n, None) for n in range(len(keys)) if n not in scores]
    return [*scores.items(), *unscored]
