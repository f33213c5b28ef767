"""``POST /v1/responses/input_tokens``: the tokens of a request's whole resolved context.

A ``responses`` upstream counts them itself (exact). Anything else is counted here (see
:mod:`gateway.context.tokens`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from session import normalise_input

from ..api.request_body import InputTokensBody
from ..context.items import model_context
from ..upstream.errors import UpstreamInvalidResponse
from ..upstream.responses import upstream_payload
from .stateless import stateless_request

if TYPE_CHECKING:
    from .service import ResponsesService

# The fields OpenAI's count endpoint takes, of a stateless request.
_COUNTED_FIELDS = (
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "text",
    "truncation",
)


async def count_input_tokens(service: ResponsesService, body: InputTokensBody, project: str) -> int:
    """Resolve the context as a turn would; ask a ``responses`` upstream, else count here."""
    model = body.model
    route = service.route(model) if model is not None else None
    history = await service.history(body, project)
    items = model_context(service.sealer, project, history, normalise_input(body.input))
    if route is None or model is None:
        request = {"input": items, "instructions": body.instructions, "tools": body.tools}
        return await service.token_counter.count(request)
    request = stateless_request(body, route, items)
    if route.provider.wire_api != "responses":
        return await service.token_counter.count(request)
    payload = upstream_payload(request, stream=False)
    counted = {key: payload[key] for key in _COUNTED_FIELDS if key in payload}
    answer = await service.fetch(route, model, project, "/responses/input_tokens", counted)
    if answer is None:
        return await service.token_counter.count(request)
    tokens = answer.get("input_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise UpstreamInvalidResponse(
            route.provider_name,
            f"The upstream provider '{route.provider_name}' sent no input_tokens count.",
        )
    return tokens
