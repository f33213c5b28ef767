"""Requests about a context that make no turn: compact it, count its tokens.

``POST /v1/responses/compact`` and ``POST /v1/responses/input_tokens`` resolve their
context as a turn would (see :meth:`gateway.turn.service.ResponsesService.resolve`);
what they do with it is here. An upstream that can compact or count does it itself (a
``responses`` one: exact); for any other the gateway does (see
:mod:`gateway.context.compaction` and :mod:`gateway.context.tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from session import Item

from ..api.request_body import CreateResponseBody
from ..config import Route
from ..context.compaction import compacted_output, compaction_object, is_ours, summarise
from ..context.tokens import TokenCounter
from ..errors import invalid_request
from ..sealing import Sealer
from ..upstream import Upstream
from ..upstream.results import complete_usage
from .stateless import stateless_request


@dataclass(frozen=True, slots=True)
class Context:
    """A request's resolved context: what precedes its input, its own input, and the
    context the model would see (both, with compactions expanded)."""

    history: list[Item]
    own: list[Item]
    items: list[Item]


async def compact(
    body: CreateResponseBody,
    route: Route,
    upstream: Upstream,
    context: Context,
    sealer: Sealer,
    project: str,
) -> tuple[dict[str, Any], Item | None]:
    """The compacted window of the context (its user messages, then a ``compaction``
    item) and the usage that cost. An empty context is a 400 naming ``input``."""
    items = [item for item in context.items if item.get("type") != "compaction_trigger"]
    if not items:
        raise invalid_request(
            "There is nothing to compact: send 'input' items, 'previous_response_id' or "
            "a 'conversation' that holds items.",
            param="input",
            code="missing_required_parameter",
        )
    request = stateless_request(body, route, items)
    if upstream.capabilities.compact is not None:  # the upstream compacts by itself
        answer = await upstream.capabilities.compact(request)
        usage = answer.get("usage")
        if not isinstance(usage, dict):
            return answer, None
        usage = complete_usage(usage)  # with the details a strict client requires
        return {**answer, "usage": usage}, usage
    summary, usage = await summarise(upstream, route.upstream_model, items)
    users = [item for item in [*context.history, *context.own] if not is_ours(item)]
    return compaction_object(compacted_output(sealer, project, users, summary), usage), usage


async def count_input_tokens(
    body: CreateResponseBody,
    route: Route | None,
    upstream: Upstream | None,
    context: Context,
    counter: TokenCounter,
) -> int:
    """The tokens of the context with the request's instructions and tools: counted by
    the upstream if it can, else here (and here when no model is named)."""
    if route is None or upstream is None:
        request = {"input": context.items, "instructions": body.instructions, "tools": body.tools}
        return await counter.count(request)
    request = stateless_request(body, route, context.items)
    count = upstream.capabilities.count_input_tokens
    return await (counter.count(request) if count is None else count(request))
