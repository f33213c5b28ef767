"""``/v1/responses``: create, retrieve, delete, cancel, list input items."""

from __future__ import annotations

from typing import Literal, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...api.request_body import InputTokensBody, check_create_body, parse_create_body, validate_body
from ...api.response_object import response_object
from ...errors import invalid_request
from ...observability.request_log import note_failed_request
from ...turn.event_log import resumed
from ..json_response import EventStream, JSONResponse
from .common import project, query_choice, query_int, read_body, service


async def create_response(request: Request) -> Response:
    svc = service(request)
    body = parse_create_body(await read_body(request))  # the raw bytes are freed here
    try:
        if body.stream:
            return EventStream(await svc.stream(body, project(request)))
        if body.background:
            return JSONResponse(await svc.start_background(body, project(request)))
        return JSONResponse(await svc.respond(body, project(request)))
    except Exception:  # a try costs a success nothing
        note_failed_request(project(request), body.model)
        raise


async def cancel_response(request: Request) -> Response:
    return JSONResponse(await service(request).cancel(project(request), request.path_params["id"]))


async def input_tokens(request: Request) -> Response:
    body = check_create_body(validate_body(InputTokensBody, await read_body(request)))
    tokens = await service(request).count_input_tokens(body, project(request))
    return JSONResponse({"object": "response.input_tokens", "input_tokens": tokens})


async def compact(request: Request) -> Response:
    body = parse_create_body(await read_body(request))
    try:
        return JSONResponse(await service(request).compact(body, project(request)))
    except Exception:
        note_failed_request(project(request), body.model)
        raise


async def retrieve_response(request: Request) -> Response:
    store = service(request).store
    record = await store.get(project(request), request.path_params["id"])
    if query_choice(request, "stream", "false", ("true", "false")) == "false":
        return JSONResponse(response_object(record))
    if not record.request.background or not record.request.stream:
        raise invalid_request(
            "Only a response created with 'background' and 'stream' can be streamed again.",
            param="stream",
            code="invalid_request",
        )
    after = query_int(request, "starting_after", -1, -1, 10**9)
    return EventStream(resumed(store, record, after))


async def delete_response(request: Request) -> Response:
    response_id = request.path_params["id"]
    await service(request).store.delete(project(request), response_id)
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})


async def list_input_items(request: Request) -> Response:
    order = query_choice(request, "order", "desc", ("asc", "desc"))
    page = await service(request).store.list_input_items(
        project(request),
        request.path_params["id"],
        after=request.query_params.get("after"),
        before=request.query_params.get("before"),
        limit=query_int(request, "limit", 20, 1, 100),
        order=cast(Literal["asc", "desc"], order),
    )
    return JSONResponse(page.model_dump())


routes = [
    Route("/v1/responses", create_response, methods=["POST"]),
    Route("/v1/responses/input_tokens", input_tokens, methods=["POST"]),
    Route("/v1/responses/compact", compact, methods=["POST"]),
    Route("/v1/responses/{id}", retrieve_response, methods=["GET"]),
    Route("/v1/responses/{id}", delete_response, methods=["DELETE"]),
    Route("/v1/responses/{id}/input_items", list_input_items, methods=["GET"]),
    Route("/v1/responses/{id}/cancel", cancel_response, methods=["POST"]),
]
