"""``/v1/vector_stores``: create, list, retrieve, modify, delete, and search."""

from __future__ import annotations

import dataclasses
import time
from typing import Literal, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import new_id
from session.files import FileStore, VectorStore

from ...api.files.objects import hit_object, listed, vector_store_object
from ...api.files.vector_stores import CreateVectorStoreBody, SearchBody, UpdateVectorStoreBody
from ...api.request_body import validate_body
from ...errors import invalid_request
from ...retrieval.chunking import strategy_of
from ...retrieval.search import options_of
from ...turn.embeddings import current_key_id
from ..json_response import JSONResponse
from .common import project, query_choice, query_int, read_body
from .embeddings import files
from .vector_store_files import attach_all


async def store_object(store: FileStore, found: VectorStore) -> dict[str, object]:
    counts, size = await store.vector_store_usage(found.id)
    return vector_store_object(found, counts, size)


async def create_vector_store(request: Request) -> Response:
    body = validate_body(CreateVectorStoreBody, await read_body(request))
    store, _ = files(request).searchable()
    strategy = strategy_of(body.chunking_strategy)
    now = time.time()
    expires = body.expires_after.model_dump() if body.expires_after else None
    created = VectorStore(
        new_id("vs"), project(request), body.name or "", now, now, body.metadata or {}, expires
    )
    for file_id in body.file_ids:  # every file must be the project's before any is kept
        await store.get_file(created.project, file_id)
    await store.create_vector_store(created)
    await attach_all(request, created, [(f, {}, strategy) for f in body.file_ids], None)
    return JSONResponse(await store_object(store, created))


async def list_vector_stores(request: Request) -> Response:
    store, _ = files(request).searchable()
    order = query_choice(request, "order", "desc", ("asc", "desc"))
    found, more = await store.list_vector_stores(
        project(request),
        request.query_params.get("after"),
        query_int(request, "limit", 20, 1, 100),
        cast(Literal["asc", "desc"], order),
    )
    return JSONResponse(listed([await store_object(store, s) for s in found], more))


async def retrieve_vector_store(request: Request) -> Response:
    store, _ = files(request).searchable()
    found = await store.get_vector_store(project(request), request.path_params["id"])
    return JSONResponse(await store_object(store, found))


async def update_vector_store(request: Request) -> Response:
    body = validate_body(UpdateVectorStoreBody, await read_body(request))
    store, _ = files(request).searchable()
    found = await store.get_vector_store(project(request), request.path_params["id"])
    changed = dataclasses.replace(
        found,
        name=body.name if body.name is not None else found.name,
        metadata=body.metadata if body.metadata is not None else found.metadata,
        expires_after=(
            body.expires_after.model_dump()
            if "expires_after" in body.model_fields_set and body.expires_after
            else None
            if "expires_after" in body.model_fields_set
            else found.expires_after
        ),
        last_active_at=time.time(),
    )
    await store.update_vector_store(changed)
    return JSONResponse(await store_object(store, changed))


async def delete_vector_store(request: Request) -> Response:
    store, _ = files(request).searchable()
    store_id = request.path_params["id"]
    await store.delete_vector_store(project(request), store_id)
    return JSONResponse({"id": store_id, "object": "vector_store.deleted", "deleted": True})


async def search_vector_store(request: Request) -> Response:
    body = validate_body(SearchBody, await read_body(request))
    if body.rewrite_query:  # refused rather than ignored: no model rewrites the query here
        raise invalid_request(
            "Invalid 'rewrite_query': the gateway searches the query as given; send false.",
            param="rewrite_query",
        )
    services = files(request)
    store, _ = services.searchable()
    found = await store.get_vector_store(project(request), request.path_params["id"])
    queries = [body.query] if isinstance(body.query, str) else body.query
    queries = [q for q in queries if q.strip()]
    if not queries:
        raise invalid_request("Invalid 'query': expected a non-empty string.", param="query")
    options = options_of(
        body.max_num_results,
        body.filters,
        body.ranking_options,
        services.config.file_search.max_num_results,
    )
    hits = []
    for query in queries:
        hits += await services.search(
            project(request), [found.id], query, options, current_key_id()
        )
    best = sorted(hits, key=lambda h: -h.score)[: options.limit]
    await store.update_vector_store(dataclasses.replace(found, last_active_at=time.time()))
    return JSONResponse(
        {
            "object": "vector_store.search_results.page",
            "search_query": queries,
            "data": [hit_object(h) for h in best],
            "has_more": False,
            "next_page": None,
        }
    )


routes = [
    Route("/v1/vector_stores", create_vector_store, methods=["POST"]),
    Route("/v1/vector_stores", list_vector_stores, methods=["GET"]),
    Route("/v1/vector_stores/{id}", retrieve_vector_store, methods=["GET"]),
    Route("/v1/vector_stores/{id}", update_vector_store, methods=["POST"]),
    Route("/v1/vector_stores/{id}", delete_vector_store, methods=["DELETE"]),
    Route("/v1/vector_stores/{id}/search", search_vector_store, methods=["POST"]),
]
