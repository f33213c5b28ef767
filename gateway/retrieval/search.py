"""A search of vector stores: the request's options read (filters, ranking), the query
embedded as a query, and the store's ranking of its chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from session.files import COMPARISONS_AND_COMPOUNDS, FileStore, Hit, SearchQuery, vector_bytes

from ..errors import invalid_request
from .ingest import Embed

MAX_RESULTS = 50


@dataclass(frozen=True)
class SearchOptions:
    """What a search asks besides its query."""

    limit: int = 10
    filters: dict[str, Any] | None = None
    score_threshold: float = 0.0
    embedding_weight: float = 1.0
    text_weight: float = 0.0


def check_filter(raw: Any, param: str) -> dict[str, Any]:
    """An attribute filter as OpenAI takes it; a 400 naming its bad part."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind in ("and", "or"):
        parts = raw.get("filters")
        if not isinstance(parts, list) or not parts:
            raise invalid_request(
                f"Invalid '{param}.filters': expected a non-empty array.", param=f"{param}.filters"
            )
        return {
            "type": kind,
            "filters": [check_filter(p, f"{param}.filters[{n}]") for n, p in enumerate(parts)],
        }
    if kind not in COMPARISONS_AND_COMPOUNDS:
        raise invalid_request(
            f"Invalid '{param}.type': expected a comparison (eq, ne, gt, gte, lt, lte, in, "
            "nin) or a compound filter (and, or).",
            param=f"{param}.type",
        )
    key, value = raw.get("key"), raw.get("value")
    if not isinstance(key, str) or not key:
        raise invalid_request(f"Invalid '{param}.key': expected a string.", param=f"{param}.key")
    scalar = (str, int, float, bool)
    listed = kind in ("in", "nin")
    if (listed and not (isinstance(value, list) and all(isinstance(v, scalar) for v in value))) or (
        not listed and not isinstance(value, scalar)
    ):
        raise invalid_request(
            f"Invalid '{param}.value': expected a string, number or boolean"
            f"{' array' if listed else ''}.",
            param=f"{param}.value",
        )
    return {"type": kind, "key": key, "value": value}


def _weight(raw: Any, name: str, param: str) -> float:
    value = raw.get(name, 1.0) if isinstance(raw, dict) else 1.0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise invalid_request(
            f"Invalid '{param}.{name}': expected a number of zero or more.", param=f"{param}.{name}"
        )
    return float(value)


def options_of(
    max_num_results: Any, filters: Any, ranking: Any, default_limit: int, prefix: str = ""
) -> SearchOptions:
    """The options of a search request or a ``file_search`` tool; a 400 naming a bad one."""
    limit = default_limit if max_num_results is None else max_num_results
    if type(limit) is not int or not 1 <= limit <= MAX_RESULTS:
        raise invalid_request(
            f"Invalid '{prefix}max_num_results': expected an integer from 1 to {MAX_RESULTS}.",
            param=f"{prefix}max_num_results",
        )
    checked = None if filters is None else check_filter(filters, f"{prefix}filters")
    if ranking is not None and not isinstance(ranking, dict):
        raise invalid_request(
            f"Invalid '{prefix}ranking_options': expected an object.",
            param=f"{prefix}ranking_options",
        )
    ranking = ranking or {}
    threshold = ranking.get("score_threshold", 0.0)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        raise invalid_request(
            f"Invalid '{prefix}ranking_options.score_threshold': expected a number from 0 to 1.",
            param=f"{prefix}ranking_options.score_threshold",
        )
    hybrid = ranking.get("hybrid_search")
    embedding_weight, text_weight = 1.0, 0.0
    if hybrid is not None:
        where = f"{prefix}ranking_options.hybrid_search"
        embedding_weight = _weight(hybrid, "embedding_weight", where)
        text_weight = _weight(hybrid, "text_weight", where)
        if embedding_weight + text_weight == 0:
            raise invalid_request(f"Invalid '{where}': a weight must be above zero.", param=where)
    return SearchOptions(limit, checked, float(threshold), embedding_weight, text_weight)


async def search(
    files: FileStore,
    embed: Embed,
    project: str,
    store_ids: list[str],
    query: str,
    options: SearchOptions,
    key_id: str | None = None,
) -> list[Hit]:
    """The chunks of ``store_ids`` that best answer ``query``."""
    [vector] = await embed(project, [query], key_id)
    wanted = SearchQuery(
        query,
        vector_bytes(vector),
        options.limit,
        options.filters,
        options.score_threshold,
        options.embedding_weight,
        options.text_weight,
    )
    return await files.search_chunks(project, store_ids, wanted)
