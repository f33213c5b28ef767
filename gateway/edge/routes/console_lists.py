"""The console's lists beyond turns: the Responses conversations of the projects a viewer
may see, a page at a time by cursor; the agent Store's conversations and messages; and the
managed keys with what each used this month.

A conversations cursor is base64url JSON of the last conversation shown (its project,
creation time and id); it holds no secret, and the viewer's scope is checked on every page
whatever it names.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import StoredConversation
from session.browse import TurnQuery

from ...errors import invalid_request, not_found
from .. import console_views as views
from ..console_access import admin_only, viewer, visible_projects
from ..json_response import JSONResponse
from .common import query_int, service

PREFIX = "/v1/gateway/console"
RATE_WINDOW_SECONDS = 60.0

Position = tuple[str, float, str]  # project, created_at, id


def _cursor_of(position: Position) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode()).decode().rstrip("=")


def _position(raw: str | None, projects: list[str]) -> Position | None:
    if not raw:
        return None
    try:
        project, created_at, conversation_id = json.loads(
            base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        )
        position = (str(project), float(created_at), str(conversation_id))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        position = None
    if position is None or position[0] not in projects or not math.isfinite(position[1]):
        raise invalid_request(
            "Invalid 'cursor': send the 'next_cursor' of the previous page.",
            param="cursor",
            code="invalid_value",
        )
    return position


async def conversations(request: Request) -> Response:
    """The Responses conversations, project by project, each oldest first (the order the
    store keeps them); ``next_cursor`` is where the next page starts (``null`` at the end)."""
    who = await viewer(request)
    asked = who.scope(request.query_params.get("project") or None)
    projects = [asked] if asked is not None else await visible_projects(request, who)
    limit = query_int(request, "limit", 50, 1, 100)
    position = _position(request.query_params.get("cursor"), projects)
    store = service(request).store
    gathered: list[StoredConversation] = []  # one more than a page, to know if more remain
    start = 0 if position is None else projects.index(position[0])
    for name in projects[start:]:
        after = position[1:] if position is not None and position[0] == name else None
        gathered += await store.list_conversations(
            name, after=after, limit=limit + 1 - len(gathered)
        )
        if len(gathered) > limit:
            break
    more = len(gathered) > limit
    data = [
        {**views.conversation(kept.conversation), "updated_at": kept.updated_at}
        for kept in gathered[:limit]
    ]
    last = data[-1] if data else None
    cursor = _cursor_of((last["project"], last["created_at"], last["id"])) if last else None
    return JSONResponse(
        {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else None,
            "last_id": last["id"] if last else None,
            "has_more": more,
            "next_cursor": cursor if more else None,
        }
    )


async def keys(request: Request) -> Response:
    """Managed keys (the admin only), never a secret nor its hash, each with what it used:
    this month's spend and tokens against its budgets, and its turns in the last minute
    against its rate."""
    admin_only(await viewer(request))
    gateway = service(request)
    store, now = gateway.store, time.time()
    data = []
    for found in await store.list_keys(request.query_params.get("project") or None):
        used = await store.find_responses(TurnQuery(key_id=found.id), limit=1)
        month, spent, tokens = await gateway.spending.this_month(found.id)
        rate = None
        if found.requests_per_minute is not None:
            recent = TurnQuery(key_id=found.id, since=now - RATE_WINDOW_SECONDS)
            cap = found.requests_per_minute + 1
            rate = len(await store.find_responses(recent, limit=cap))
        usage = {
            "month": month,
            "spent_usd": round(spent, 9),
            "tokens": int(tokens) if found.budget_tokens is not None else None,
            "turns_last_minute": rate,
        }
        last = used[0].created_at if used else None
        data.append({**views.key(found), "last_used_at": last, "usage": usage})
    return JSONResponse({"object": "list", "data": data})


async def store_conversations(request: Request) -> Response:
    who = await viewer(request)
    names = [who.scope(request.query_params.get("project"))]
    if names == [None]:
        names = [str(name) for name in await visible_projects(request, who)]
    store = service(request).store
    limit = query_int(request, "limit", 20, 1, 100)
    listed = []
    for name in names:
        assert name is not None
        found = await store.agent(name).list_conversations(
            limit, request.query_params.get("cursor")
        )
        listed.append({"project": name, **found.to_json()})
    return JSONResponse({"object": "list", "data": listed})


async def store_messages(request: Request) -> Response:
    who = await viewer(request)
    conversation_id = request.path_params["id"]
    store = service(request).store
    asked = who.scope(request.query_params.get("project"))
    for candidate in [asked] if asked is not None else await visible_projects(request, who):
        agent = store.agent(candidate)
        found = await agent.get_conversation(conversation_id)
        if found is None:
            continue
        page_of = await agent.list_messages(
            conversation_id,
            "asc",
            query_int(request, "limit", 50, 1, 100),
            request.query_params.get("cursor"),
        )
        body = {"project": candidate, "conversation": found.to_json(), **page_of.to_json()}
        return JSONResponse(body)
    raise not_found(f"Conversation '{conversation_id}' not found.", code="not_found")


routes = [
    Route(f"{PREFIX}/conversations", conversations, methods=["GET"]),
    Route(f"{PREFIX}/keys", keys, methods=["GET"]),
    Route(f"{PREFIX}/store/conversations", store_conversations, methods=["GET"]),
    Route(f"{PREFIX}/store/conversations/{{id}}", store_messages, methods=["GET"]),
]
