"""Ranking a search's candidates: exact cosine similarity over their vectors, optionally
fused with a full-text ranking by weighted reciprocal rank fusion.

Scores run from 0 to 1: a vector search's is the cosine similarity (below zero: 0); a
hybrid search's is the fused score over the best a chunk could get (first in both).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from .filters import matches
from .models import Candidate, Hit, SearchQuery

RRF_K = 60  # the constant of reciprocal rank fusion, as its authors (and OpenAI) use
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
    query = set(words(text))
    if not query or not candidates:
        return []
    docs = [Counter(words(c.text)) for c in candidates]
    average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    holding = {w: sum(1 for d in docs if w in d) for w in query}
    scored: list[tuple[float, int]] = []
    for candidate, doc in zip(candidates, docs, strict=True):
        length = sum(doc.values())
        score = 0.0
        for word in query:
            count = doc.get(word, 0)
            if not count:
                continue
            idf = math.log(1 + (len(docs) - holding[word] + 0.5) / (holding[word] + 0.5))
            score += idf * count * 2.2 / (count + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append((score, candidate.key))
    scored.sort(key=lambda pair: -pair[0])
    return [key for _, key in scored]


def rank(candidates: list[Candidate], query: SearchQuery, by_text: list[int]) -> list[Hit]:
    """The best ``query.limit`` candidates passing the filter and the score threshold."""
    kept = [c for c in candidates if matches(query.filters, c.attributes)]
    wanted = np.frombuffer(query.vector, dtype="<f4")
    kept = [c for c in kept if len(c.vector) == len(query.vector)]
    if not kept:
        return []
    matrix = np.frombuffer(b"".join(c.vector for c in kept), dtype="<f4").reshape(len(kept), -1)
    similarity = matrix @ wanted
    by_vector = [kept[i].key for i in np.argsort(-similarity, kind="stable")]
    cosine = {c.key: float(s) for c, s in zip(kept, similarity, strict=True)}
    hybrid = query.text_weight > 0 and bool(by_text)
    if hybrid:
        allowed = set(cosine)
        text_ranks = {key: n for n, key in enumerate((k for k in by_text if k in allowed), 1)}
        vector_ranks = {key: n for n, key in enumerate(by_vector, 1)}
        best = (query.embedding_weight + query.text_weight) / (RRF_K + 1)
        scores = {
            key: (
                query.embedding_weight / (RRF_K + vector_ranks[key])
                + (query.text_weight / (RRF_K + text_ranks[key]) if key in text_ranks else 0.0)
            )
            / best
            for key in cosine
        }
    else:
        scores = {key: max(0.0, min(1.0, value)) for key, value in cosine.items()}
    ordered = sorted(kept, key=lambda c: (-scores[c.key], c.key))
    return [
        Hit(c.store_id, c.file_id, c.filename, c.position, c.text, scores[c.key], c.attributes)
        for c in ordered
        if scores[c.key] >= query.score_threshold
    ][: query.limit]
