"""``POST /v1/responses/input_tokens``: the tokens of a request's whole resolved context.

An upstream that can counts them itself (a ``responses`` one: exact). Anything else is
counted here (see :mod:`gateway.context.tokens`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from session import normalise_input

from ..api.request_body import InputTokensBody
from ..context.items import model_context
from .stateless import stateless_request

if TYPE_CHECKING:
    from .service import ResponsesService


async def count_input_tokens(service: ResponsesService, body: InputTokensBody, project: str) -> int:
    """Resolve the context as a turn would; ask the upstream if it counts, else count here."""
    model = body.model
    route = service.route(model) if model is not None else None
    history = await service.history(body, project)
    items = model_context(service.sealer, project, history, normalise_input(body.input))
    if route is None or model is None:
        request = {"input": items, "instructions": body.instructions, "tools": body.tools}
        return await service.token_counter.count(request)
    request = stateless_request(body, route, items)
    count = service.upstream(route, model, project).capabilities.count_input_tokens
    if count is None:
        return await service.token_counter.count(request)
    return await count(request)
