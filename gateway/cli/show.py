"""``gateway show``: a stored response, its chain, or a conversation, as a person reads it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from session import (
    DEFAULT_MAX_DEPTH,
    ChainAncestorMissing,
    ChainCycle,
    ChainTooDeep,
    Conversation,
    Item,
    ResponseNotFound,
    SessionStore,
    StoredResponse,
)

_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")
_LABEL = 13  # the width of the labels of a record's header


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _field(label: str, value: object, width: int = _LABEL) -> str:
    """``label`` and ``value`` on one line; a value of several lines is indented below."""
    first, *rest = str(value).split("\n")
    return "\n".join(
        [f"  {label.ljust(width)}{first}", *(f"  {' ' * width}{line}" for line in rest)]
    )


def _route(route: Any) -> str:
    """The deployment that answered, then each attempt: key, outcome and seconds (and the
    deployment, when a fallback's differs)."""
    if not isinstance(route, dict):
        return _json(route)
    answered = route.get("answered_by")
    attempts = [a for a in route.get("attempts") or [] if isinstance(a, dict)]
    rows = [
        [
            str(attempt.get("key") or "-"),
            str(attempt.get("outcome") or "-"),
            f"{attempt.get('seconds')} s",
            "" if attempt.get("deployment") == answered else str(attempt.get("deployment")),
        ]
        for attempt in attempts
    ]
    widths = [max((len(row[n]) for row in rows), default=0) for n in range(3)]
    lines = [str(answered) if answered else "no deployment answered"]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[3]]).rstrip())
    affinity = route.get("affinity")
    if isinstance(affinity, dict):
        lines.append(_affinity(affinity))
    return "\n".join(lines)


def _affinity(affinity: dict[str, Any]) -> str:
    """A turn's affinity in words: kept, moved (from where, why) or new."""
    source, target = affinity.get("source"), affinity.get("target")
    if affinity.get("outcome") == "moved":
        return f"affinity ({source}): moved from {target}: {affinity.get('reason')}"
    if affinity.get("outcome") == "kept":
        return f"affinity ({source}): kept on {target}"
    return f"affinity ({source}): {affinity.get('outcome') or 'not answered'}"


def _metadata_field(key: str, value: Any) -> tuple[str, object]:
    """A stored metadata value under a label a person reads (JSON for a structured one)."""
    if key == "route":
        return "route", _route(value)
    if key == "time_to_first_token_seconds":
        return "first token", f"{value} s"
    return key, _json(value) if isinstance(value, dict | list) else value


def _part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return _json(part)
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return str(part.get("text", ""))
    if kind == "refusal":
        return f"[refusal] {part.get('refusal', '')}"
    if kind == "input_image":
        url = part.get("image_url")
        shown = url if isinstance(url, str) and not url.startswith("data:") else part.get("file_id")
        return f"[image {shown}]" if shown else "[image]"
    if kind == "input_file":
        return f"[file {part.get('filename') or part.get('file_id') or ''}]".replace(" ]", "]")
    return f"[{kind}]"


def _text(content: Any) -> str:
    """The readable text of a message's content or a tool's output (a string or parts)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(_part(part) for part in content)
    return _part(content)


def _arguments(arguments: Any) -> str:
    """A call's arguments, its JSON spaced for reading (as sent when it is not JSON)."""
    if isinstance(arguments, str):
        try:
            return _json(json.loads(arguments))
        except ValueError:
            return arguments
    return _json(arguments)


def _reasoning(item: Item) -> str:
    texts = [_text(item.get("summary")), _text(item.get("content"))]
    if item.get("encrypted_content"):
        texts.append("[encrypted state kept]")
    return "\n".join(text for text in texts if text)


def _heading_and_body(item: Item) -> tuple[str, str]:
    kind = item.get("type", "message")
    call = f" ({item['call_id']})" if item.get("call_id") else ""
    if kind == "message":
        return str(item.get("role", "message")), _text(item.get("content"))
    if kind == "function_call":
        return f"tool call {item.get('name')}{call}", _arguments(item.get("arguments"))
    if kind == "custom_tool_call":
        return f"tool call {item.get('name')}{call}", str(item.get("input", ""))
    if kind in ("function_call_output", "custom_tool_call_output"):
        return f"tool output{call}", _text(item.get("output"))
    if kind == "reasoning":
        return "reasoning", _reasoning(item)
    if kind == "compaction":
        return "compaction", "[summary of the earlier turns, sealed]"
    if kind == "item_reference":
        return f"reference to {item.get('id')}", ""
    rest = {key: value for key, value in item.items() if key not in ("id", "type", "status")}
    return str(kind), _json(rest)


def render_item(item: Item) -> list[str]:
    """An item as a heading and its text indented below it."""
    heading, body = _heading_and_body(item)
    return [heading, *(f"  {line}" for line in body.splitlines())]


def _usage(usage: Item) -> str:
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens", 0)
    return (
        f"input {usage.get('input_tokens', 0)} (cached {cached}), "
        f"output {usage.get('output_tokens', 0)} (reasoning {reasoning}), "
        f"total {usage.get('total_tokens', 0)}"
    )


def _response_fields(record: StoredResponse) -> list[str]:
    response = record.response
    error = response.error or {}
    optional: list[tuple[str, object]] = [
        ("completed", None if record.completed_at is None else _when(record.completed_at)),
        ("previous", record.previous_response_id),
        ("conversation", record.conversation_id),
        ("tools", ", ".join(str(t.get("name", t.get("type"))) for t in record.request.tools)),
        ("usage", None if response.usage is None else _usage(response.usage)),
        ("error", f"{error.get('code')}: {error.get('message')}" if error else None),
        ("incomplete", (response.incomplete_details or {}).get("reason")),
        ("metadata", _json(record.request.metadata) if record.request.metadata else None),
        *(_metadata_field(str(key), value) for key, value in record.metadata.items()),
    ]
    if record.status in ("in_progress", "queued"):
        optional.append(("instance", record.instance_id))
    fields: list[tuple[str, object]] = [
        ("project", record.project),
        ("model", record.request.model),
        ("status", record.status),
        ("created", _when(record.created_at)),
        *((label, value) for label, value in optional if value),
    ]
    width = max(_LABEL, *(len(label) + 2 for label, _ in fields))
    return [f"response {record.id}", *(_field(label, value, width) for label, value in fields)]


def render_response(record: StoredResponse) -> str:
    """A turn: its header, then its instructions, its input items and its output items."""
    lines = [*_response_fields(record), ""]
    instructions = record.request.instructions
    if isinstance(instructions, str):
        lines += render_item({"type": "message", "role": "instructions", "content": instructions})
    elif instructions:
        for item in instructions:
            lines += render_item(item)
    for item in [*record.request.input, *record.response.output]:
        lines += render_item(item)
    return "\n".join(lines)


def render_chain(records: list[StoredResponse], missing: str | None = None) -> str:
    """Turns oldest first, each headed by its place in the chain."""
    count = len(records)
    lines = [f"chain of {count} turn{'s' if count != 1 else ''} ending at {records[-1].id}"]
    if missing is not None:
        lines.append(f"(its earlier turns are gone: {missing})")
    for number, record in enumerate(records, start=1):
        lines += ["", f"--- turn {number} of {count} ---", render_response(record)]
    return "\n".join(lines)


def render_conversation(conversation: Conversation, items: list[Item]) -> str:
    """A conversation: its header, then its items in order."""
    lines = [
        f"conversation {conversation.id}",
        _field("project", conversation.project),
        _field("created", _when(conversation.created_at)),
        _field("items", len(items)),
    ]
    if conversation.metadata:
        lines.append(_field("metadata", _json(conversation.metadata)))
    lines.append("")
    for item in items:
        lines += render_item(item)
    return "\n".join(lines)


async def chain_of(store: SessionStore, project: str, response_id: str) -> str:
    """The chain ending at ``response_id``, whatever its turns' statuses (which would stop
    a chain from being continued), as far back as its turns are kept."""
    records: list[StoredResponse] = []
    seen: set[str] = set()
    current: str | None = response_id
    missing = None
    while current is not None:
        if current in seen:
            raise ChainCycle(current)
        if len(records) >= DEFAULT_MAX_DEPTH:
            raise ChainTooDeep(response_id, DEFAULT_MAX_DEPTH)
        try:
            record = await store.get(project, current)
        except ResponseNotFound:
            if not records:
                raise
            missing = ChainAncestorMissing(current).message
            break
        seen.add(current)
        records.append(record)
        current = record.previous_response_id
    return render_chain(records[::-1], missing)


async def show(store: SessionStore, project: str, record_id: str, chain: bool) -> str:
    """What ``gateway show`` prints for ``record_id``."""
    if record_id.startswith("conv_"):
        if chain:
            raise SystemExit(f"gateway: --chain follows responses; {record_id} is a conversation")
        conversation = await store.get_conversation(project, record_id)
        return render_conversation(conversation, await store.conversation_items(project, record_id))
    if chain:
        return await chain_of(store, project, record_id)
    return render_response(await store.get(project, record_id))
