"""``/v1/store/``: the agent Store over HTTP, camelCase JSON, scoped to the caller's project.

Each route takes the body fields it names and no others: an unknown one is a 400 naming it.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session.agent_store import AgentStore, NewMessage, StoreError

from ...api.json_body import parse_json_object
from ..json_response import JSONResponse
from .common import project, query_int, read_body, service

PREFIX = "/v1/store"


def agent(request: Request) -> AgentStore:
    return service(request).store.agent(project(request))


def _bad(message: str, param: str | None = None) -> StoreError:
    return StoreError("BadRequest", message, param=param)


def known_fields(raw: dict[str, Any], allowed: tuple[str, ...], where: str = "") -> None:
    """A 400 naming the first field of ``raw`` not in ``allowed``."""
    for name in raw:
        if name not in allowed:
            takes = f"fields {', '.join(allowed)}" if allowed else "no body"
            raise _bad(f"Unknown field '{where}{name}': this takes {takes}.", f"{where}{name}")


async def body_of(request: Request, *allowed: str) -> dict[str, Any]:
    """The JSON object sent (none is ``{}``), holding only fields among ``allowed``."""
    raw = await read_body(request)
    parsed: dict[str, Any] = parse_json_object(raw) if raw else {}
    known_fields(parsed, allowed)
    return parsed


MESSAGE_FIELDS = ("payload", "role", "type", "metadata", "messageId")


def new_message(raw: Any, n: int) -> NewMessage:
    where = f"messages[{n}]"
    if not isinstance(raw, dict) or "payload" not in raw:
        raise _bad("Each message is an object with a 'payload'.", where)
    known_fields(raw, MESSAGE_FIELDS, f"{where}.")
    for key in ("role", "type", "messageId"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise _bad(f"'{where}.{key}' is a string or null.", f"{where}.{key}")
    return NewMessage(
        raw["payload"], raw.get("role"), raw.get("type"), raw.get("metadata"), raw.get("messageId")
    )


def no_content() -> Response:
    return Response(status_code=204)


def path_id(request: Request, name: str = "id") -> str:
    value: str = request.path_params[name]
    return value


# -- conversations ---------------------------------------------------------------------


async def create_conversation(request: Request) -> Response:
    body = await body_of(request, "conversationId", "metadata")
    created = await agent(request).create_conversation(
        body.get("conversationId"), body.get("metadata")
    )
    return JSONResponse(created.to_json(), status_code=201)


async def list_conversations(request: Request) -> Response:
    page = await agent(request).list_conversations(
        query_int(request, "limit", 20, 1, 100), request.query_params.get("cursor")
    )
    return JSONResponse(page.to_json())


async def get_conversation(request: Request) -> Response:
    found = await agent(request).get_conversation(path_id(request))
    if found is None:
        raise StoreError("NotFound", f"Conversation '{path_id(request)}' not found.")
    return JSONResponse(found.to_json())


async def update_conversation(request: Request) -> Response:
    body = await body_of(request, "metadata")
    if "metadata" not in body:
        raise _bad("Send {'metadata': {...}}.", "metadata")
    updated = await agent(request).update_conversation(path_id(request), body["metadata"])
    return JSONResponse(updated.to_json())


async def delete_conversation(request: Request) -> Response:
    await body_of(request)
    await agent(request).delete_conversation(path_id(request))
    return no_content()


async def clear_messages(request: Request) -> Response:
    await body_of(request)
    await agent(request).clear_messages(path_id(request))
    return no_content()


# -- messages --------------------------------------------------------------------------


async def append_messages(request: Request) -> Response:
    body = await body_of(request, "messages")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _bad("Send {'messages': [...]}.", "messages")
    appended = await agent(request).append_messages(
        path_id(request), [new_message(raw, n) for n, raw in enumerate(messages)]
    )
    return JSONResponse({"items": [message.to_json() for message in appended]}, status_code=201)


async def pop_message(request: Request) -> Response:
    await body_of(request)
    popped = await agent(request).pop_message(path_id(request))
    return JSONResponse({"message": None if popped is None else popped.to_json()})


async def list_messages(request: Request) -> Response:
    order = request.query_params.get("order", "asc")
    page = await agent(request).list_messages(
        path_id(request),
        order,
        query_int(request, "limit", 50, 1, 1000),
        request.query_params.get("cursor"),
    )
    return JSONResponse(page.to_json())


async def get_message(request: Request) -> Response:
    found = await agent(request).get_message(path_id(request, "message_id"))
    if found is None:
        raise StoreError("NotFound", f"Message '{path_id(request, 'message_id')}' not found.")
    return JSONResponse(found.to_json())


async def update_message(request: Request) -> Response:
    fields = await body_of(request, "role", "type", "payload", "metadata")
    updated = await agent(request).update_message(path_id(request, "message_id"), **fields)
    return JSONResponse(updated.to_json())


async def delete_message(request: Request) -> Response:
    await body_of(request)
    await agent(request).delete_message(path_id(request, "message_id"))
    return no_content()


# -- state and bindings ----------------------------------------------------------------


async def get_state(request: Request) -> Response:
    value = await agent(request).state_get(path_id(request), path_id(request, "key"))
    return JSONResponse({"value": value})


async def put_state(request: Request) -> Response:
    body = await body_of(request, "value")
    if "value" not in body:
        raise _bad("Send {'value': ...}.", "value")
    await agent(request).state_set(path_id(request), path_id(request, "key"), body["value"])
    return no_content()


async def delete_state(request: Request) -> Response:
    await body_of(request)
    await agent(request).state_delete(path_id(request), path_id(request, "key"))
    return no_content()


async def claude_binding(request: Request) -> Response:
    body = await body_of(request, "conversationId")
    conversation_id = body.get("conversationId")
    if not isinstance(conversation_id, str):
        raise _bad("Send {'conversationId': '...'}.", "conversationId")
    session_id = await agent(request).claude_session_binding(conversation_id)
    return JSONResponse({"sessionId": session_id})


async def call(request: Request) -> Response:
    raw = await read_body(request)
    args = parse_json_object(raw) if raw else {}
    result = await agent(request).call(path_id(request, "name"), args)
    return JSONResponse({"result": result})


# Ids may hold "/" (a namespaced session id does): they match as paths, so the routes with
# a suffix come before the bare ones.
CONVERSATION = f"{PREFIX}/conversations/{{id:path}}"
routes = [
    Route(f"{PREFIX}/conversations", create_conversation, methods=["POST"]),
    Route(f"{PREFIX}/conversations", list_conversations, methods=["GET"]),
    Route(f"{CONVERSATION}/messages", append_messages, methods=["POST"]),
    Route(f"{CONVERSATION}/messages", list_messages, methods=["GET"]),
    Route(f"{CONVERSATION}/pop", pop_message, methods=["POST"]),
    Route(f"{CONVERSATION}/clear", clear_messages, methods=["POST"]),
    Route(f"{CONVERSATION}/state/{{key}}", get_state, methods=["GET"]),
    Route(f"{CONVERSATION}/state/{{key}}", put_state, methods=["PUT"]),
    Route(f"{CONVERSATION}/state/{{key}}", delete_state, methods=["DELETE"]),
    Route(CONVERSATION, get_conversation, methods=["GET"]),
    Route(CONVERSATION, update_conversation, methods=["PATCH"]),
    Route(CONVERSATION, delete_conversation, methods=["DELETE"]),
    Route(f"{PREFIX}/messages/{{message_id:path}}", get_message, methods=["GET"]),
    Route(f"{PREFIX}/messages/{{message_id:path}}", update_message, methods=["PATCH"]),
    Route(f"{PREFIX}/messages/{{message_id:path}}", delete_message, methods=["DELETE"]),
    Route(f"{PREFIX}/claude-bindings", claude_binding, methods=["POST"]),
    Route(f"{PREFIX}/calls/{{name}}", call, methods=["POST"]),
]
