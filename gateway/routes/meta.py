"""``/v1/models`` and ``/healthz``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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


routes = [
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
]
