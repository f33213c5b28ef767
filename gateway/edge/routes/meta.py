"""``/v1/models`` (and one model, ``/v1/models/{model}``), ``/healthz`` (the process
answers), ``/readyz`` (the store works) and ``/metrics`` (Prometheus; with API keys on, for
``auth.admin_key`` only)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from session import SessionError

from ...config import GatewayConfig
from ...errors import not_found
from ...observability.metrics import Metrics
from ..auth import is_admin, unauthorized
from ..errors import RETRY_AFTER_SECONDS
from ..json_response import JSONResponse
from ..messages_errors import anthropic_error_response
from .common import service

EPOCH = "1970-01-01T00:00:00Z"  # a configured model has no creation date of its own


async def list_models(request: Request) -> Response:
    config = service(request).config
    if "client_version" in request.query_params:  # Codex asks for its own catalog
        return JSONResponse({"models": codex_catalog(config)})
    if "anthropic-version" in request.headers:  # Anthropic's clients, in their shape
        return JSONResponse(anthropic_catalog(config))
    data = [
        openai_model(name, route.targets(name)[0].provider) for name, route in config.models.items()
    ]
    return JSONResponse({"object": "list", "data": data})


async def retrieve_model(request: Request) -> Response:
    """One model the gateway routes, in Anthropic's shape for Anthropic's clients, else in
    OpenAI's; a 404 in the same shape for a name nothing routes."""
    name = request.path_params["model"]
    route = service(request).config.route(name)
    anthropic = "anthropic-version" in request.headers
    if route is None:
        error = not_found(
            f"The model '{name}' does not exist or is not routed by this gateway.",
            param="model",
            code="model_not_found",
        )
        if anthropic:
            return anthropic_error_response(error)
        raise error
    if anthropic:
        return JSONResponse(anthropic_model(name, route.context_window))
    return JSONResponse(openai_model(name, route.provider_name))


def openai_model(name: str, provider: str) -> dict[str, Any]:
    """A model as OpenAI's ``GET /v1/models`` shows one, owned by its first provider."""
    return {"id": name, "object": "model", "created": 0, "owned_by": provider}


def anthropic_model(name: str, context_window: int | None) -> dict[str, Any]:
    """A model as Anthropic's ``GET /v1/models`` shows one."""
    model: dict[str, Any] = {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": EPOCH,
    }
    model |= {"lifecycle": "active", "deprecated_at": None, "retires_at": None}
    return model | ({"max_input_tokens": context_window} if context_window is not None else {})


def anthropic_catalog(config: GatewayConfig) -> dict[str, Any]:
    """The configured models as Anthropic's ``GET /v1/models`` lists them (one page)."""
    data = [anthropic_model(name, listed.context_window) for name, listed in config.models.items()]
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"data": data, "has_more": False, "first_id": first, "last_id": last}


def codex_catalog(config: GatewayConfig) -> list[dict[str, Any]]:
    """The configured models in the shape of Codex's ``ModelInfo``."""
    catalog = []
    for name, route in config.models.items():
        codex = route.codex
        catalog.append(
            {
                "slug": name,
                "display_name": codex.display_name or name,
                "description": codex.description,
                "default_reasoning_level": codex.default_reasoning_level,
                "supported_reasoning_levels": [
                    {"effort": effort, "description": f"{effort} reasoning"}
                    for effort in codex.reasoning_levels
                ],
                "shell_type": codex.shell_type,
                "visibility": "list",
                "supported_in_api": True,
                "priority": codex.priority,
                "upgrade": None,
                "base_instructions": codex.base_instructions,
                "supports_reasoning_summaries": bool(codex.reasoning_levels),
                "support_verbosity": False,
                "default_verbosity": None,
                "apply_patch_tool_type": codex.apply_patch_tool_type,
                "truncation_policy": {"mode": "bytes", "limit": 10_000},
                "supports_parallel_tool_calls": codex.supports_parallel_tool_calls,
                "context_window": route.context_window,
                "effective_context_window_percent": 95,
                "experimental_supported_tools": [],
                "input_modalities": ["text", "image"],
            }
        )
    return catalog


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
    _check_admin(request, "The metrics")
    registry: Metrics = request.app.state.metrics
    body, content_type = registry.render()
    return Response(body, media_type=content_type)


def _check_admin(request: Request, what: str) -> None:
    settings = service(request).config.auth
    if settings.mode == "keys" and not is_admin(settings, request.headers.get("authorization")):
        raise unauthorized(f"{what} need the admin key (auth.admin_key) as a Bearer token.")


async def gateway_routes(request: Request) -> Response:
    """Every model's deployments and fallbacks, every provider's keys (never the secrets),
    and the deployments and keys that failed lately, with their cooldowns."""
    _check_admin(request, "The routes")
    svc = service(request)
    config = svc.config
    models = {
        name: {
            "deployments": [
                {"deployment": route.deployment, "weight": route.weight}
                for route in config.routes(name)
            ],
            "fallbacks": listed.fallbacks,
            "context_window_fallbacks": listed.context_window_fallbacks,
        }
        for name, listed in config.models.items()
    }
    providers = {
        name: {
            "wire_api": provider.wire_api,
            "keys": [
                {"key": f"{name}#{index}", "weight": key.weight, "rpm": key.requests_per_minute}
                for index, key in enumerate(provider.api_keys)
            ],
        }
        for name, provider in config.providers.items()
    }
    cooldowns = svc.upstreams.cooldowns
    await cooldowns.refresh()  # those other instances started too
    body = {"models": models, "providers": providers, "cooldowns": cooldowns.report()}
    return JSONResponse(body)


async def reset_gateway_routes(request: Request) -> Response:
    """End every cooldown and forget recent failures."""
    _check_admin(request, "The routes")
    await service(request).upstreams.cooldowns.reset()
    return JSONResponse({"cooldowns": {}})


routes = [
    Route("/v1/gateway/routes", gateway_routes, methods=["GET"]),
    Route("/v1/gateway/routes/reset", reset_gateway_routes, methods=["POST"]),
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/v1/models/{model:path}", retrieve_model, methods=["GET"]),
    Route("/healthz", health, methods=["GET"]),
    Route("/readyz", ready, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
