"""``POST /v1/responses/compact``: a ``responses`` upstream compacts, else the gateway does
(see :mod:`gateway.context.compaction`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from session import normalise_input

from ..api.request_body import CreateResponseBody
from ..context.compaction import compacted_output, compaction_object, is_ours, summarise
from ..context.items import model_context
from ..errors import invalid_request
from ..upstream.errors import UpstreamInvalidResponse
from ..upstream.responses import upstream_payload
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
    if route.provider.wire_api == "responses":
        payload = upstream_payload(stateless_request(body, route, items), stream=False)
        for key in ("store", "stream"):
            payload.pop(key, None)
        answer = await service.fetch(route, body.model, project, "/responses/compact", payload)
        if answer is not None:
            if not isinstance(answer.get("output"), list):
                raise UpstreamInvalidResponse(
                    route.provider_name,
                    f"The upstream provider '{route.provider_name}' sent an invalid compaction.",
                )
            usage = answer.get("usage")
            await service.keep_usage(
                project, body.model, usage if isinstance(usage, dict) else None
            )
            return answer
    upstream = service.upstream(route, body.model, project)
    summary, usage = await summarise(upstream, route.upstream_model, items)
    await service.keep_usage(project, body.model, usage)
    users = [item for item in [*history, *own] if not is_ours(item)]
    return compaction_object(compacted_output(service.sealer, project, users, summary), usage)
