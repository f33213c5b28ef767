"""``POST /v1/responses/compact``: an upstream that can compacts, else the gateway does
(see :mod:`gateway.context.compaction`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from session import normalise_input

from ..api.request_body import CreateResponseBody
from ..context.compaction import compacted_output, compaction_object, is_ours, summarise
from ..context.items import model_context
from ..errors import invalid_request
from .stateless import stateless_request

if TYPE_CHECKING:
    from .service import ResponsesService


async def compact_conversation(
    service: ResponsesService, body: CreateResponseBody, project: str
) -> dict[str, Any]:
    """The compacted window of the request's context: its user messages, then a
    ``compaction`` item. A context with nothing in it is a 400 naming ``input``."""
    route = service.route(body.model)
    history = await service.history(body, project)
    own = normalise_input(body.input)
    items = model_context(service.sealer, project, history, own)
    items = [item for item in items if item.get("type") != "compaction_trigger"]
    if not items:
        raise invalid_request(
            "There is nothing to compact: send 'input' items, 'previous_response_id' or "
            "a 'conversation' that holds items.",
            param="input",
            code="missing_required_parameter",
        )
    upstream = service.upstream(route, body.model, project)
    request = stateless_request(body, route, items)
    if upstream.capabilities.compact is not None:  # the upstream compacts by itself
        answer = await upstream.capabilities.compact(request)
        usage = answer.get("usage")
        await service.keep_usage(project, body.model, usage if isinstance(usage, dict) else None)
        return answer
    summary, usage = await summarise(upstream, route.upstream_model, items)
    await service.keep_usage(project, body.model, usage)
    users = [item for item in [*history, *own] if not is_ours(item)]
    return compaction_object(compacted_output(service.sealer, project, users, summary), usage)
