"""``POST /v1/messages`` bodies -> the gateway's own stateless Responses request. Pure.

``system`` becomes ``instructions``; each message becomes input items (text, images and
documents as input parts, ``tool_use`` as ``function_call``, ``tool_result`` as
``function_call_output`` with its ``is_error``, thinking through :class:`ThinkingSeals`);
tools become function tools; ``max_tokens`` is ``max_output_tokens``; ``thinking`` is a
reasoning effort. The turn is run with ``store: false``: a Messages client sends its whole
conversation every time.
"""

from __future__ import annotations

import json
from typing import Any

from session import Item

from ..request_body import CreateResponseBody, InputTokensBody, check_create_body
from .body import MessagesBody, invalid
from .thinking import ThinkingSeals

MIN_OUTPUT_TOKENS = 16  # the Responses floor; a smaller max_tokens is applied after checks
_CLIENT_TOOL_TYPES = frozenset({None, "custom"})
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _text_of(system: str | list[Item] | None) -> str | None:
    if system is None or isinstance(system, str):
        return system or None
    texts = []
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise invalid(f"system.{index}", "system blocks must be text blocks")
        texts.append(str(block.get("text") or ""))
    return "\n\n".join(texts) or None


def _source(block: Item, param: str, media_types: frozenset[str]) -> str:
    """An image's or a PDF's source as the data URL or https URL input parts take."""
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        media_type, data = source.get("media_type"), source.get("data")
        if media_type not in media_types or not isinstance(data, str):
            expected = ", ".join(sorted(media_types))
            raise invalid(
                f"{param}.source", f"media_type must be one of {expected}, with base64 data"
            )
        return f"data:{media_type};base64,{data}"
    if kind == "url" and isinstance(source, dict) and isinstance(source.get("url"), str):
        return str(source["url"])
    raise invalid(f"{param}.source", f"unsupported source type {kind!r}: use 'base64' or 'url'")


def _part(block: Item, param: str) -> Item:
    """A user content block as a Responses input part."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "input_text", "text": str(block.get("text") or "")}
    if kind == "image":
        url = _source(block, param, _IMAGE_TYPES)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if kind == "document":
        source = block.get("source") or {}
        if isinstance(source, dict) and source.get("type") == "text":
            return {"type": "input_text", "text": str(source.get("data") or "")}
        url = _source(block, param, frozenset({"application/pdf"}))
        part: Item = {"type": "input_file"}
        if url.startswith("data:"):
            part["file_data"] = url
            part["filename"] = str(block.get("title") or "document.pdf")
        else:
            part["file_url"] = url
        return part
    raise invalid(f"{param}.type", f"content blocks of type {kind!r} are not supported here")


def _tool_output(block: Item, param: str) -> Item:
    content = block.get("content")
    output: Any
    if content is None or isinstance(content, str):
        output = content or ""
    elif isinstance(content, list):
        output = [_part(part, f"{param}.content.{n}") for n, part in enumerate(content)]
        if all(part["type"] == "input_text" for part in output):
            output = "\n".join(part["text"] for part in output)
    else:
        raise invalid(f"{param}.content", "Input should be a valid string or a list of blocks")
    made: Item = {
        "type": "function_call_output",
        "call_id": str(block.get("tool_use_id") or ""),
        "output": output,
    }
    if block.get("is_error") is True:  # each wire tells its model in its own way
        made["is_error"] = True
    return made


def _blocks(content: Any, param: str) -> list[Item]:
    if content is None:
        raise invalid(param, "Field required")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise invalid(param, "Input should be a valid string or a list of blocks")
    return content


def _user_items(content: Any, param: str) -> list[Item]:
    items: list[Item] = []
    parts: list[Item] = []
    for index, block in enumerate(_blocks(content, param)):
        where = f"{param}.{index}"
        if block.get("type") == "tool_result":
            items.append(_tool_output(block, where))
        elif block.get("type") != "text" or block.get("text"):
            parts.append(_part(block, where))
    if parts:  # the results answer the calls before; the text follows them
        items.append({"type": "message", "role": "user", "content": parts})
    return items


def _assistant_items(content: Any, param: str, seals: ThinkingSeals) -> list[Item]:
    items: list[Item] = []
    for index, block in enumerate(_blocks(content, param)):
        kind, where = block.get("type"), f"{param}.{index}"
        if kind == "text":
            if block.get("text"):
                text = {"type": "output_text", "text": str(block["text"]), "annotations": []}
                items.append({"type": "message", "role": "assistant", "content": [text]})
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {})
            call = {"type": "function_call", "call_id": str(block.get("id") or "")}
            items.append({**call, "name": str(block.get("name") or ""), "arguments": arguments})
        elif kind in ("thinking", "redacted_thinking"):
            items += seals.items(block, where)
        else:
            raise invalid(
                f"{where}.type", f"assistant content blocks of type {kind!r} are not supported here"
            )
    return items


def input_items(messages: list[Item], seals: ThinkingSeals) -> list[Item]:
    """The conversation as Responses input items."""
    items: list[Item] = []
    for index, message in enumerate(messages):
        param = f"messages.{index}"
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user":
            items += _user_items(message.get("content"), f"{param}.content")
        elif role == "assistant":
            items += _assistant_items(message.get("content"), f"{param}.content", seals)
        elif role == "system":  # Claude Code sends system reminders among the messages
            blocks = _blocks(message.get("content"), f"{param}.content")
            parts = [_part(block, f"{param}.content.{n}") for n, block in enumerate(blocks)]
            items.append({"type": "message", "role": "system", "content": parts})
        else:
            raise invalid(f"{param}.role", "Input should be 'user', 'assistant' or 'system'")
    return items


def _tools(tools: list[Item] | None) -> list[Item]:
    made = []
    for index, tool in enumerate(tools or []):
        if tool.get("type") not in _CLIENT_TOOL_TYPES:
            raise invalid(
                f"tools.{index}.type",
                f"tools of type {tool.get('type')!r} are not supported through this gateway: "
                "offer them as client tools with an input_schema",
            )
        function: Item = {"type": "function", "name": tool.get("name"), "strict": False}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
        made.append(function)
    return made


def _tool_choice(choice: Item | None) -> tuple[Any, bool]:
    """The Responses ``tool_choice`` and ``parallel_tool_calls``."""
    if choice is None:
        return "auto", True
    kind = choice.get("type")
    parallel = not choice.get("disable_parallel_tool_use", False)
    if kind == "tool":
        return {"type": "function", "name": str(choice.get("name") or "")}, parallel
    modes = {"auto": "auto", "any": "required", "none": "none"}
    if kind not in modes:
        raise invalid("tool_choice.type", f"unknown tool_choice type {kind!r}")
    return modes[str(kind)], parallel


def _effort(body: MessagesBody) -> str | None:
    """``thinking`` as a reasoning effort: a budget below 4096 is low, below 16384 medium."""
    thinking = body.thinking or {}
    kind = thinking.get("type")
    if kind == "adaptive":
        effort = (body.output_config or {}).get("effort")
        return effort if effort in ("low", "medium", "high") else "medium"
    if kind != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    budget = budget if isinstance(budget, int) else 0
    return "low" if budget < 4096 else "medium" if budget < 16384 else "high"


def _format(body: MessagesBody) -> Item | None:
    fmt = body.output_format or (body.output_config or {}).get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return {"format": {"type": "json_schema", "name": "output", "schema": fmt.get("schema")}}
    return None


def responses_fields(body: MessagesBody, seals: ThinkingSeals) -> Item:
    """The fields of the Responses request ``body`` asks for."""
    if body.mcp_servers:
        raise invalid("mcp_servers", "not supported through this gateway")
    choice, parallel = _tool_choice(body.tool_choice)
    fields: Item = {
        "model": body.model,
        "input": input_items(body.messages, seals),
        "store": False,
        "stream": body.stream,
        "tools": _tools(body.tools),
        "tool_choice": choice,
        "parallel_tool_calls": parallel,
        "max_output_tokens": max(body.max_tokens, MIN_OUTPUT_TOKENS),
    }
    optional = {
        "instructions": _text_of(body.system),
        "temperature": body.temperature,
        "top_p": body.top_p,
        "text": _format(body),
    }
    fields.update({key: value for key, value in optional.items() if value is not None})
    if (effort := _effort(body)) is not None:
        fields["reasoning"] = {"effort": effort, "summary": "auto"}
    user = (body.metadata or {}).get("user_id")
    if isinstance(user, str) and user:
        fields["user"] = user[:256]
    return fields


def to_responses_body(body: MessagesBody, seals: ThinkingSeals) -> CreateResponseBody:
    """The turn to run for ``body`` (``max_tokens`` below the Responses floor kept)."""
    made = check_create_body(CreateResponseBody.model_validate(responses_fields(body, seals)))
    made.max_output_tokens = body.max_tokens
    return made


def to_count_body(body: MessagesBody, seals: ThinkingSeals) -> InputTokensBody:
    """The input-token count ``body`` asks for."""
    return check_create_body(InputTokensBody.model_validate(responses_fields(body, seals)))


def stop_cut(text: str, sequences: list[str] | None) -> tuple[str, str | None]:
    """``text`` up to the first stop sequence in it, and that sequence (``None``: none)."""
    found: tuple[int, str] | None = None
    for sequence in sequences or ():
        at = text.find(sequence) if sequence else -1
        if at >= 0 and (found is None or at < found[0]):
            found = (at, sequence)
    return (text, None) if found is None else (text[: found[0]], found[1])
