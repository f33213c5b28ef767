"""``/v1/models``, ``/healthz`` (the process answers), ``/readyz`` (the store works) and
``/metrics`` (Prometheus; with API keys on, for ``auth.admin_key`` only)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import SessionError

from ..auth import is_admin, unauthorized
from ..errors import RETRY_AFTER_SECONDS
from ..json_response import JSONResponse
from ..metrics import Metrics
from .common import service


async def list_models(request: Request) -> Response:
    config = service(request).config
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": route.provider}
        for name, route in config.models.items()
    ]
    return JSONResponse({"object": "list", "data": data})


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    try:
        await service(request).store.ping()
    except SessionError as error:
        body = {"status": "unavailable", "store": error.message}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_SECONDS})
    return JSONResponse({"status": "ok", "store": "ok"})


async def metrics(request: Request) -> Response:
    settings = service(request).config.auth
    if settings.mode == "keys" and not is_admin(settings, request.headers.get("authorization")):
        raise unauthorized("The metrics need the admin key (auth.admin_key) as a Bearer token.")
    registry: Metrics = request.app.state.metrics
    body, content_type = registry.render()
    return Response(body, media_type=content_type)


routes = [
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
    Route("/readyz", ready, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
