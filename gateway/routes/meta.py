"""``/v1/models``, ``/healthz`` (the process answers) and ``/readyz`` (the store works)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import SessionError

from ..errors import RETRY_AFTER_SECONDS
from ..json_response import JSONResponse
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


routes = [
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
    Route("/readyz", ready, methods=["GET"]),
]
