"""The console: its page at ``/console`` and the JSON it reads, under ``/v1/gateway/console``.

The page is static files shipped in the package (``gateway/console/static``): a shell of
HTML, plain DOM code, and uPlot for the charts (vendored with its license: small, fast, and
free of inline scripts and ``eval``, so it runs under ``script-src 'self'``). The page needs
no templating library: one small helper builds elements and sets every stored string as
``textContent``, so stored markup is never parsed as HTML, and there is nothing more to
vendor. Nothing is built at install time and nothing is fetched from another host. Every
JSON endpoint here is documented in ``docs/api.md`` and usable on its own with a Bearer key.
"""

from __future__ import annotations

import math
import time
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import ConversationNotFound, ResponseNotFound, StoredResponse, hash_secret
from session.browse import GroupBy, TurnQuery, usage_series

from ...api.json_body import parse_json_object
from ...errors import invalid_request, not_found
from .. import console_views as views
from ..console_access import (
    COOKIE,
    Viewer,
    sessions,
    viewer,
    viewer_of_token,
    visible_projects,
)
from ..json_response import JSONResponse
from . import console_lists
from .common import query_choice, query_int, read_body, service

PREFIX = "/v1/gateway/console"
CHAIN_PAGE = 50
CHILDREN_SHOWN = 20
BUCKETS = {"hour": 3600.0, "day": 86400.0}
MAX_BUCKETS = 2000
LAST_TIME = 253_402_300_799.0  # 9999-12-31T23:59:59Z
_STATIC = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "uPlot.iife.min.js": "text/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


# -- the page ----------------------------------------------------------------------------


def _asset(name: str) -> bytes:
    return resources.files("gateway").joinpath("console", "static", name).read_bytes()


async def page(request: Request) -> Response:
    """The console's one page; the client routes by the URL's fragment."""
    return Response(_asset("index.html"), media_type=_STATIC["index.html"])


async def favicon(request: Request) -> Response:
    """The gateway's icon, for the tab a browser shows (it asks for ``/favicon.ico``)."""
    return Response(
        _asset("favicon.svg"),
        media_type=_STATIC["favicon.svg"],
        headers={"cache-control": "max-age=86400"},
    )


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _STATIC:
        raise not_found(f"No console file named {name!r}.")
    return Response(_asset(name), media_type=_STATIC[name], headers={"cache-control": "no-cache"})


# -- who looks ---------------------------------------------------------------------------


def _who(found: Viewer) -> dict[str, Any]:
    return {"admin": found.admin, "project": found.project, "key_id": found.key_id}


async def whoami(request: Request) -> Response:
    found = await viewer(request)
    return JSONResponse({"auth": service(request).config.auth.mode, **_who(found)})


async def login(request: Request) -> Response:
    """Checks a key sent in the body and opens a session for it, held in an HttpOnly,
    SameSite=Strict cookie (Secure over https) that expires with the session."""
    body = parse_json_object(await read_body(request))
    key = body.get("key")
    if not isinstance(key, str) or not key:
        raise invalid_request("Send {'key': 'YOUR_KEY'}.", param="key", code="missing_key")
    found = await viewer_of_token(request, key)
    answer = JSONResponse({"auth": service(request).config.auth.mode, **_who(found)})
    opened = sessions(request)
    answer.set_cookie(
        COOKIE,
        opened.issue(hash_secret(key)),
        max_age=int(opened.lifetime_seconds),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return answer


async def logout(request: Request) -> Response:
    """Ends the cookie's session on every instance and clears the cookie."""
    if cookie := request.cookies.get(COOKIE):
        await sessions(request).end(cookie)
    answer = JSONResponse({"logged_out": True})
    answer.delete_cookie(
        COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return answer


# -- finding records ---------------------------------------------------------------------


async def _turn(request: Request, who: Viewer, response_id: str) -> StoredResponse:
    """A turn the viewer may see, in the project asked for or the first that holds it."""
    asked = who.scope(request.query_params.get("project"))
    store = service(request).store
    for name in [asked] if asked is not None else await visible_projects(request, who):
        try:
            found: StoredResponse = await store.get(name, response_id)
            return found
        except ResponseNotFound:
            continue
    raise ResponseNotFound(response_id)


async def _conversation_project(request: Request, who: Viewer, conversation_id: str) -> str:
    asked = who.scope(request.query_params.get("project"))
    store = service(request).store
    for name in [asked] if asked is not None else await visible_projects(request, who):
        try:
            await store.get_conversation(name, conversation_id)
            return name
        except ConversationNotFound:
            continue
    raise ConversationNotFound(conversation_id)


async def search(request: Request) -> Response:
    """What an id names: a turn, a conversation, an agent Store conversation, or the turn a
    request id made."""
    who = await viewer(request)
    query = request.query_params.get("q", "").strip()
    if not query:
        raise invalid_request("Send 'q': an id to look for.", param="q", code="missing_query")
    store = service(request).store
    if query.startswith("resp_"):
        try:
            record = await _turn(request, who, query)
            return JSONResponse({"kind": "response", "id": record.id, "project": record.project})
        except ResponseNotFound:
            pass
    if query.startswith("conv_"):
        try:
            owner = await _conversation_project(request, who, query)
            return JSONResponse({"kind": "conversation", "id": query, "project": owner})
        except ConversationNotFound:
            pass
    made = await store.find_responses(TurnQuery(project=who.scope(None), request_id=query), limit=1)
    if made:
        body = {"kind": "response", "id": made[0].id, "project": made[0].project}
        return JSONResponse({**body, "request_id": query})
    for name in await visible_projects(request, who):
        if await store.agent(name).get_conversation(query) is not None:
            return JSONResponse({"kind": "store_conversation", "id": query, "project": name})
    raise not_found(f"Nothing found for {query!r}.", code="not_found")


def _time(request: Request, name: str) -> float | None:
    """A time in Unix seconds, from 0 to the end of year 9999; ``float()`` alone would take
    NaN, infinities and numbers past any calendar."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= LAST_TIME:  # False for NaN too
        raise invalid_request(
            f"Invalid '{name}': expected Unix seconds from 0 to {LAST_TIME:.0f}, got {raw[:40]!r}.",
            param=name,
            code="invalid_value",
        )
    return value


async def list_turns(request: Request) -> Response:
    """Recent turns, newest first, by project, model, status, key and time."""
    who = await viewer(request)
    params = request.query_params
    before = None
    if after := params.get("after"):
        last = await _turn(request, who, after)
        before = (last.created_at, last.id)
    query = TurnQuery(
        project=who.scope(params.get("project") or None),
        model=params.get("model") or None,
        status=params.get("status") or None,
        key_id=params.get("key") or None,
        since=_time(request, "since"),
        until=_time(request, "until"),
        before=before,
    )
    limit = query_int(request, "limit", 50, 1, 200)
    found = await service(request).store.find_responses(query, limit + 1)
    data = [views.summary(record) for record in found[:limit]]
    return JSONResponse(_listed(data, len(found) > limit))


def _listed(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {
        "object": "list",
        "data": data,
        "first_id": first,
        "last_id": last,
        "has_more": has_more,
    }


async def get_turn(request: Request) -> Response:
    who = await viewer(request)
    record = await _turn(request, who, request.path_params["id"])
    children = await service(request).store.children(record.project, record.id, CHILDREN_SHOWN)
    return JSONResponse(views.turn(record, children))


async def chain(request: Request) -> Response:
    """A page of the chain ending at a turn, newest first; ``has_more`` while older turns
    remain (the next page starts at the last one's ``previous_response_id``)."""
    who = await viewer(request)
    head = await _turn(request, who, request.path_params["id"])
    limit = query_int(request, "limit", CHAIN_PAGE, 1, 200)
    store = service(request).store
    found: list[StoredResponse] = await store.ancestors(head.project, head.id, limit)
    data = []
    for record in found:
        children = await store.children(record.project, record.id, CHILDREN_SHOWN)
        data.append(views.turn(record, children))
    more = bool(found) and found[-1].previous_response_id is not None and len(found) == limit
    body = _listed(data, more)
    body["next"] = found[-1].previous_response_id if more else None
    body["project"] = head.project
    return JSONResponse(body)


async def get_conversation(request: Request) -> Response:
    who = await viewer(request)
    conversation_id = request.path_params["id"]
    owner = await _conversation_project(request, who, conversation_id)
    store = service(request).store
    found = await store.get_conversation(owner, conversation_id)
    items = await store.list_items(
        owner,
        conversation_id,
        after=request.query_params.get("after") or None,
        limit=query_int(request, "limit", 50, 1, 100),
        order="asc",
    )
    return JSONResponse({**views.conversation(found), "items": items.model_dump()})


async def usage(request: Request) -> Response:
    """Totals per hour or day over a range, per group and overall: the figures
    ``gateway usage`` prints for the same range."""
    who = await viewer(request)
    now = time.time()
    bucket = BUCKETS[query_choice(request, "bucket", "hour", tuple(BUCKETS))]
    until = _time(request, "until") or now
    since = _time(request, "since")
    since = until - 24 * 3600.0 if since is None else since
    if since >= until or (until - since) / bucket > MAX_BUCKETS:
        raise invalid_request(
            f"'since' must come before 'until', within {MAX_BUCKETS} buckets.",
            param="since",
            code="invalid_value",
        )
    by: GroupBy = query_choice(request, "by", "model", ("project", "model", "key"))  # type: ignore[assignment]
    params = request.query_params
    model, key = params.get("model") or None, params.get("key") or None
    samples = await service(request).store.usage_samples(
        who.scope(params.get("project") or None), since, until
    )
    chosen = [
        sample
        for sample in samples
        if model in (None, sample.model) and key in (None, sample.key_id)
    ]
    return JSONResponse(usage_series(chosen, since=since, until=until, bucket=bucket, by=by))


async def projects(request: Request) -> Response:
    who = await viewer(request)
    return JSONResponse({"object": "list", "data": await visible_projects(request, who)})


routes = [
    Route("/favicon.ico", favicon, methods=["GET"]),
    Route("/console", page, methods=["GET"]),
    Route("/console/", page, methods=["GET"]),
    Route("/console/static/{name}", asset, methods=["GET"]),
    Route(f"{PREFIX}/whoami", whoami, methods=["GET"]),
    Route(f"{PREFIX}/login", login, methods=["POST"]),
    Route(f"{PREFIX}/logout", logout, methods=["POST"]),
    Route(f"{PREFIX}/search", search, methods=["GET"]),
    Route(f"{PREFIX}/projects", projects, methods=["GET"]),
    Route(f"{PREFIX}/responses", list_turns, methods=["GET"]),
    Route(f"{PREFIX}/responses/{{id}}", get_turn, methods=["GET"]),
    Route(f"{PREFIX}/responses/{{id}}/chain", chain, methods=["GET"]),
    Route(f"{PREFIX}/conversations/{{id}}", get_conversation, methods=["GET"]),
    Route(f"{PREFIX}/usage", usage, methods=["GET"]),
    *console_lists.routes,
]
