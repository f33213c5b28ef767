"""``/v1/vector_stores/{id}/files`` and ``/file_batches``: files attached to a vector store
(processed in the background), listed, retrieved, detached, and their chunks' text."""

from __future__ import annotations

import time
from typing import Any, Literal, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import new_id
from session.files import FileBatch, FileStatus, VectorStore, VectorStoreFile

from ...api.files.objects import batch_object, listed, vector_store_file_object
from ...api.files.vector_stores import AttachFileBody, CreateBatchBody, check_attributes
from ...api.request_body import validate_body
from ...errors import invalid_request
from ...retrieval.chunking import strategy_of
from ...turn.embeddings import current_key_id
from ..json_response import JSONResponse
from .common import project, query_choice, query_int, read_body
from .embeddings import files

STATUSES = ("in_progress", "completed", "failed", "cancelled")
Attach = tuple[str, dict[str, Any], dict[str, Any]]  # file id, attributes, chunking


async def attach_all(
    request: Request, store: VectorStore, wanted: list[Attach], batch: FileBatch | None
) -> list[VectorStoreFile]:
    """Attach files (each the project's) in progress, and start processing them.

    A file named twice is attached once, as its last mention asks: two attachments of
    one file at one instant would both be processed and write its chunks twice."""
    wanted = list({one[0]: one for one in wanted}.values())
    files_store, ingestion = files(request).searchable()
    for file_id, _, _ in wanted:
        await files_store.get_file(store.project, file_id)
    now = time.time()
    attached = [
        VectorStoreFile(
            store.id,
            file_id,
            store.project,
            now,
            "in_progress",
            chunking,
            attributes,
            batch_id=batch.id if batch else None,
        )
        for file_id, attributes, chunking in wanted
    ]
    if batch is not None:
        await files_store.create_batch(batch, attached)
    else:
        for one in attached:
            await files_store.attach_file(one)
    key_id = current_key_id()
    for one in attached:
        ingestion.start(one, key_id)
    return attached


async def _store(request: Request) -> VectorStore:
    files_store, _ = files(request).searchable()
    return await files_store.get_vector_store(project(request), request.path_params["id"])


async def attach_file(request: Request) -> Response:
    body = validate_body(AttachFileBody, await read_body(request))
    store = await _store(request)
    wanted = (body.file_id, check_attributes(body.attributes), strategy_of(body.chunking_strategy))
    [attached] = await attach_all(request, store, [wanted], None)
    return JSONResponse(vector_store_file_object(attached))


async def list_files(request: Request) -> Response:
    store = await _store(request)
    status = request.query_params.get("filter")
    if status is not None and status not in STATUSES:
        raise invalid_request(
            f"Invalid 'filter': expected one of {', '.join(STATUSES)}.", param="filter"
        )
    files_store, _ = files(request).searchable()
    found, more = await files_store.list_vector_store_files(
        store.project,
        store.id,
        request.query_params.get("after"),
        query_int(request, "limit", 20, 1, 100),
        cast(Literal["asc", "desc"], query_choice(request, "order", "desc", ("asc", "desc"))),
        cast(FileStatus | None, status),
        request.path_params.get("batch_id"),
    )
    return JSONResponse(listed([vector_store_file_object(a) for a in found], more))


async def retrieve_file(request: Request) -> Response:
    files_store, _ = files(request).searchable()
    found = await files_store.get_vector_store_file(
        project(request), request.path_params["id"], request.path_params["file_id"]
    )
    return JSONResponse(vector_store_file_object(found))


async def detach_file(request: Request) -> Response:
    files_store, _ = files(request).searchable()
    file_id = request.path_params["file_id"]
    await files_store.detach_file(project(request), request.path_params["id"], file_id)
    return JSONResponse({"id": file_id, "object": "vector_store.file.deleted", "deleted": True})


async def file_content(request: Request) -> Response:
    files_store, _ = files(request).searchable()
    texts = await files_store.file_chunks(
        project(request), request.path_params["id"], request.path_params["file_id"]
    )
    return JSONResponse(
        {
            "object": "vector_store.file_content.page",
            "data": [{"type": "text", "text": text} for text in texts],
            "has_more": False,
            "next_page": None,
        }
    )


async def create_batch(request: Request) -> Response:
    body = validate_body(CreateBatchBody, await read_body(request))
    if (body.file_ids is None) == (body.files is None):
        raise invalid_request("Give one of 'file_ids' and 'files'.", param="file_ids")
    store = await _store(request)
    strategy = strategy_of(body.chunking_strategy)
    shared = check_attributes(body.attributes)
    wanted: list[Attach] = [(f, shared, strategy) for f in body.file_ids or []]
    for n, one in enumerate(body.files or []):
        attributes = check_attributes(one.attributes, f"files[{n}].attributes")
        chunking = (
            strategy_of(one.chunking_strategy, f"files[{n}].chunking_strategy")
            if one.chunking_strategy is not None
            else strategy
        )
        wanted.append((one.file_id, attributes, chunking))
    batch = FileBatch(new_id("vsfb"), store.id, store.project, time.time())
    attached = await attach_all(request, store, wanted, batch)
    return JSONResponse(batch_object(batch, attached))


async def retrieve_batch(request: Request) -> Response:
    files_store, _ = files(request).searchable()
    store = await _store(request)
    batch = await files_store.get_batch(store.project, store.id, request.path_params["batch_id"])
    found, _ = await files_store.list_vector_store_files(
        store.project, store.id, None, 10_000, "asc", None, batch.id
    )
    return JSONResponse(batch_object(batch, found))


async def batch_files(request: Request) -> Response:
    files_store, _ = files(request).searchable()
    store = await _store(request)
    await files_store.get_batch(store.project, store.id, request.path_params["batch_id"])
    return await list_files(request)


_FILES = "/v1/vector_stores/{id}/files"
_BATCHES = "/v1/vector_stores/{id}/file_batches"
routes = [
    Route(_FILES, attach_file, methods=["POST"]),
    Route(_FILES, list_files, methods=["GET"]),
    Route(_FILES + "/{file_id}", retrieve_file, methods=["GET"]),
    Route(_FILES + "/{file_id}", detach_file, methods=["DELETE"]),
    Route(_FILES + "/{file_id}/content", file_content, methods=["GET"]),
    Route(_BATCHES, create_batch, methods=["POST"]),
    Route(_BATCHES + "/{batch_id}", retrieve_batch, methods=["GET"]),
    Route(_BATCHES + "/{batch_id}/files", batch_files, methods=["GET"]),
]
