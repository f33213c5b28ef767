"""A search's reads, written once for SQLite and PostgreSQL: the chunks of the stores'
completed files that pass the filter (applied in the query), their vectors for an exact
ranking in numpy, the full-text ranking by the database's own index, and the details of
the chunks found.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..sql.dialect import Dialect
from ..sql.statement import Returning, in_list, rows
from .filter_sql import filter_condition
from .models import Candidate, SearchQuery
from .ranking import FUSION_DEPTH, nearest, words

SEARCHED = (
    " JOIN vector_store_files a ON a.store_id = c.store_id AND a.file_id = c.file_id"
    " WHERE c.store_id IN ({stores}) AND a.project = :project AND a.status = 'completed'"
    " AND ({filters})"
)
"""The join and condition (over ``chunks c``) that keep the chunks a search may find."""


def searched(
    dialect: Dialect, project: str, store_ids: list[str], query: SearchQuery
) -> tuple[str, dict[str, Any]]:
    """:data:`SEARCHED` for this search, and its parameters."""
    listed, params = in_list("store", store_ids)
    condition, filtered = filter_condition(dialect, query.filters, "a.attributes")
    return SEARCHED.format(stores=listed, filters=condition), {
        "project": project,
        **params,
        **filtered,
    }


def exact_nearest(
    dialect: Dialect, project: str, store_ids: list[str], query: SearchQuery, depth: int
) -> Returning[list[tuple[int, float]]]:
    """The ids of the ``depth`` chunks nearest the query's vector, best first, with their
    cosine: every vector of the chunks searched compared in one matrix product."""
    where, params = searched(dialect, project, store_ids, query)
    found = yield rows(
        f"SELECT c.id, c.vector FROM chunks c{where} AND length(c.vector) = :size",
        size=len(query.vector),
        **params,
    )
    if not found:
        return []
    matrix = np.frombuffer(b"".join(row[1] for row in found), dtype="<f4")
    ranked = nearest(matrix.reshape(len(found), -1), query.vector, depth)
    return [(int(found[row][0]), cosine) for row, cosine in ranked]


def text_order(
    dialect: Dialect, project: str, store_ids: list[str], query: SearchQuery
) -> Returning[list[int]]:
    """The chunks searched that hold the query's words, best first, by the database's full
    text: FTS5's BM25 in SQLite, ``ts_rank_cd`` over a ``tsvector`` in PostgreSQL."""
    found_words = list(dict.fromkeys(words(query.text)))
    if not found_words:
        return []
    where, params = searched(dialect, project, store_ids, query)
    if dialect.postgres:
        found = yield rows(
            f"SELECT c.id FROM to_tsquery('english', :query) AS q, chunks c{where}"
            " AND c.words @@ q ORDER BY ts_rank_cd(c.words, q) DESC, c.id LIMIT :depth",
            query=" | ".join(found_words),
            depth=FUSION_DEPTH,
            **params,
        )
    else:
        found = yield rows(
            f"SELECT c.id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid{where}"
            " AND chunks_fts MATCH :query ORDER BY bm25(chunks_fts), c.id LIMIT :depth",
            query=" OR ".join(f'"{word}"' for word in found_words),
            depth=FUSION_DEPTH,
            **params,
        )
    return [int(row[0]) for row in found]


def details(ids: list[int]) -> Returning[dict[int, Candidate]]:
    """The chunks of ``ids`` with their file's name and attributes (no vectors)."""
    if not ids:
        return {}
    listed, params = in_list("id", ids)
    found = yield rows(
        "SELECT c.id, c.store_id, c.file_id, coalesce(f.filename, c.file_id), c.position,"
        " c.text, a.attributes FROM chunks c JOIN vector_store_files a"
        " ON a.store_id = c.store_id AND a.file_id = c.file_id"
        f" LEFT JOIN files f ON f.id = c.file_id WHERE c.id IN ({listed})",
        **params,
    )
    return {
        int(r[0]): Candidate(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], b"", json.loads(r[6]))
        for r in found
    }
