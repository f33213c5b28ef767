"""``/v1/conversations``: conversations and their items."""

from __future__ import annotations

from typing import Any, Literal, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import Conversation, Item, ItemPage, new_id

from ...api.request_body import (
    CreateConversationBody,
    CreateItemsBody,
    UpdateConversationBody,
    validate_body,
)
from ...api.validation import check_items
from ...context.compaction import check_sealed
from ..json_response import JSONResponse
from .common import project, query_choice, query_int, read_body, service


def conversation_object(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": conversation.id,
        "object": "conversation",
        "created_at": int(conversation.created_at),
        "metadata": conversation.metadata,
    }


def _usable_items(request: Request, items: list[Any]) -> list[Item]:
    """The items of a request body, each of a shape and content its turns can use."""
    checked = check_items(items, "items")
    check_sealed(service(request).sealer, project(request), checked, "items")
    return checked


async def create_conversation(request: Request) -> Response:
    body = validate_body(CreateConversationBody, await read_body(request))
    items = _usable_items(request, body.items)
    conversation = Conversation(
        id=new_id("conv"), project=project(request), metadata=body.metadata or {}
    )
    await service(request).store.create_conversation(conversation, items)
    return JSONResponse(conversation_object(conversation))


async def retrieve_conversation(request: Request) -> Response:
    store = service(request).store
    conversation = await store.get_conversation(project(request), request.path_params["id"])
    return JSONResponse(conversation_object(conversation))


async def update_conversation(request: Request) -> Response:
    body = validate_body(UpdateConversationBody, await read_body(request))
    store = service(request).store
    conversation = await store.update_conversation(
        project(request), request.path_params["id"], body.metadata
    )
    return JSONResponse(conversation_object(conversation))


async def delete_conversation(request: Request) -> Response:
    conversation_id = request.path_params["id"]
    await service(request).store.delete_conversation(project(request), conversation_id)
    return JSONResponse({"id": conversation_id, "object": "conversation.deleted", "deleted": True})


async def create_items(request: Request) -> Response:
    body = validate_body(CreateItemsBody, await read_body(request))
    items = _usable_items(request, body.items)
    stored = await service(request).store.append_items(
        project(request), request.path_params["id"], items
    )
    return JSONResponse(ItemPage.of(stored, has_more=False).model_dump())


async def list_items(request: Request) -> Response:
    order = query_choice(request, "order", "desc", ("asc", "desc"))
    page = await service(request).store.list_items(
        project(request),
        request.path_params["id"],
        after=request.query_params.get("after"),
        limit=query_int(request, "limit", 20, 1, 100),
        order=cast(Literal["asc", "desc"], order),
    )
    return JSONResponse(page.model_dump())


async def retrieve_item(request: Request) -> Response:
    item = await service(request).store.get_item(
        project(request), request.path_params["id"], request.path_params["item_id"]
    )
    return JSONResponse(item)


async def delete_item(request: Request) -> Response:
    store, tenant, conversation_id = (
        service(request).store,
        project(request),
        request.path_params["id"],
    )
    await store.delete_item(tenant, conversation_id, request.path_params["item_id"])
    return JSONResponse(conversation_object(await store.get_conversation(tenant, conversation_id)))


routes = [
    Route("/v1/conversations", create_conversation, methods=["POST"]),
    Route("/v1/conversations/{id}", retrieve_conversation, methods=["GET"]),
    Route("/v1/conversations/{id}", update_conversation, methods=["POST"]),
    Route("/v1/conversations/{id}", delete_conversation, methods=["DELETE"]),
    Route("/v1/conversations/{id}/items", create_items, methods=["POST"]),
    Route("/v1/conversations/{id}/items", list_items, methods=["GET"]),
    Route("/v1/conversations/{id}/items/{item_id}", retrieve_item, methods=["GET"]),
    Route("/v1/conversations/{id}/items/{item_id}", delete_item, methods=["DELETE"]),
]
