"""Ranking a search's candidates: exact cosine similarity over their vectors, optionally
fused with a full-text ranking by weighted reciprocal rank fusion.

Scores run from 0 to 1: a vector search's is the cosine similarity (below zero: 0); a
hybrid search's is the fused score over the best a chunk could get (first in both). A
hybrid search fuses each ranking's best ``FUSION_DEPTH``, so a backend whose vector index
finds only the nearest chunks ranks exactly as one that compares every vector.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, TypeVar

import numpy as np

from .filters import matches
from .models import Candidate, Hit, SearchQuery

RRF_K = 60  # the constant of reciprocal rank fusion, as its authors (and OpenAI) use
FUSION_DEPTH = 200  # how many of each ranking's best a hybrid search fuses
K = TypeVar("K", bound=Hashable)
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, as full-text queries take them."""
    return _WORD.findall(text.lower())


def vector_bytes(vector: list[float]) -> bytes:
    """A vector as kept: float32, scaled to unit length."""
    array = np.asarray(vector, dtype="<f4")
    norm = float(np.linalg.norm(array))
    return (array / norm if norm else array).astype("<f4").tobytes()


def text_order(candidates: list[Candidate], text: str) -> list[int]:
    """The keys of the candidates holding the query's words, best first (BM25), for a
    backend without full-text search of its own."""
    docs = [Counter(words(c.text)) for c in candidates]
    return bm25_order(docs, [c.key for c in candidates], text)


def bm25_order(docs: Sequence[Counter[str]], keys: Sequence[int], text: str) -> list[int]:
    """The keys of the documents (each its words counted) holding the query's words, best
    first by BM25."""
    query = set(words(text))
    if not query or not docs:
        return []
    average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    holding = {w: sum(1 for d in docs if w in d) for w in query}
    scored: list[tuple[float, int]] = []
    for key, doc in zip(keys, docs, strict=True):
        if query.isdisjoint(doc):
            continue
        length = sum(doc.values())
        score = 0.0
        for word in query:
            count = doc.get(word, 0)
            if not count:
                continue
            idf = math.log(1 + (len(docs) - holding[word] + 0.5) / (holding[word] + 0.5))
            score += idf * count * 2.2 / (count + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append((score, key))
    scored.sort(key=lambda pair: -pair[0])
    return [key for _, key in scored]


def nearest(matrix: np.ndarray[Any, Any], wanted: bytes, depth: int) -> list[tuple[int, float]]:
    """The ``depth`` rows of ``matrix`` (unit float32 vectors) most like ``wanted``, best
    first (ties: the lower row), with their cosine similarity."""
    if not len(matrix) or depth <= 0:
        return []
    return best_of(matrix @ np.frombuffer(wanted, dtype="<f4"), depth)


def best_of(similarity: np.ndarray[Any, Any], depth: int) -> list[tuple[int, float]]:
    """The ``depth`` best of the similarities, best first (ties: the lower index)."""
    if not len(similarity) or depth <= 0:
        return []
    if depth < len(similarity):
        picked = np.argpartition(-similarity, depth - 1)[:depth]
    else:
        picked = np.arange(len(similarity))
    ordered = picked[np.lexsort((picked, -similarity[picked]))]
    return [(int(row), float(similarity[row])) for row in ordered]


def fuse(
    by_vector: Sequence[tuple[K, float]], by_text: Sequence[K], query: SearchQuery
) -> list[tuple[K, float]]:
    """The best ``query.limit`` chunks and their scores, from the chunks nearest the query's
    vector (best first, with their cosine) and, for a hybrid search, those holding its
    words (best first): the cosine alone, or each ranking's best ``FUSION_DEPTH`` fused."""
    if not (query.text_weight > 0 and by_text):
        scored = [(key, max(0.0, min(1.0, cosine))) for key, cosine in by_vector]
    else:
        best = (query.embedding_weight + query.text_weight) / (RRF_K + 1)
        fused: dict[K, float] = {}
        for n, (key, _) in enumerate(by_vector[:FUSION_DEPTH], 1):
            fused[key] = query.embedding_weight / (RRF_K + n)
        for n, key in enumerate(by_text[:FUSION_DEPTH], 1):
            fused[key] = fused.get(key, 0.0) + query.text_weight / (RRF_K + n)
        order = {key: n for n, key in enumerate(fused)}
        scored = sorted(
            ((key, value / best) for key, value in fused.items()),
            key=lambda pair: (-pair[1], order[pair[0]]),
        )
    return [(key, score) for key, score in scored if score >= query.score_threshold][: query.limit]


def depth_of(query: SearchQuery) -> int:
    """How many of the nearest chunks a search needs: its results, or a hybrid's fusion."""
    return max(query.limit, FUSION_DEPTH) if query.text_weight > 0 else query.limit


def rank(candidates: list[Candidate], query: SearchQuery, by_text: list[int]) -> list[Hit]:
    """The best ``query.limit`` candidates passing the filter and the score threshold."""
    kept = [c for c in candidates if matches(query.filters, c.attributes)]
    kept = [c for c in kept if len(c.vector) == len(query.vector)]
    if not kept:
        return []
    matrix = np.frombuffer(b"".join(c.vector for c in kept), dtype="<f4").reshape(len(kept), -1)
    by_vector = [
        (kept[row].key, cosine) for row, cosine in nearest(matrix, query.vector, depth_of(query))
    ]
    allowed = {c.key: c for c in kept}
    found = fuse(by_vector, [key for key in by_text if key in allowed], query)
    return [hit_of(allowed[key], score) for key, score in found]


def hit_of(c: Candidate, score: float) -> Hit:
    """A candidate found, with its score."""
    return Hit(c.store_id, c.file_id, c.filename, c.position, c.text, score, c.attributes)
