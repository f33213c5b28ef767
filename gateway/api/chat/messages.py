"""Chat ``messages`` -> Responses input items, each with the message it came from.

``system`` and ``developer`` messages keep their place and role (each wire puts them where
it must); a user's ``image_url`` and ``file`` parts become ``input_image`` and
``input_file``; an assistant's ``tool_calls`` become ``function_call`` (or
``custom_tool_call``) items after its text; a ``tool`` message a ``function_call_output``.
"""

from __future__ import annotations

from typing import Any

from session import Item

from ...errors import APIError, invalid_request

_ROLES = ("system", "developer", "user", "assistant", "tool")


def _type_error(param: str, expected: str) -> APIError:
    return invalid_request(
        f"Invalid type for '{param}': expected {expected}.", param, "invalid_type"
    )


def _missing(param: str) -> APIError:
    return invalid_request(
        f"Missing required parameter: '{param}'.", param, "missing_required_parameter"
    )


def _string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise _missing(param) if value is None else _type_error(param, "a string")
    return value


def _text_only(content: Any, param: str) -> str:
    """Content that may hold text alone (system, developer, tool): one string."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _type_error(param, "a string or an array of text parts")
    texts = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        if not isinstance(part, dict) or part.get("type") != "text":
            raise invalid_request(
                f"Invalid value for '{where}': only 'text' parts are allowed here.",
                where,
                "invalid_value",
            )
        texts.append(_string(part.get("text"), f"{where}.text"))
    return "\n".join(texts)


def _user_part(part: Any, param: str) -> Item:
    if not isinstance(part, dict):
        raise _type_error(param, "an object")
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": _string(part.get("text"), f"{param}.text")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        converted: Item = {
            "type": "input_image",
            "image_url": _string(url, f"{param}.image_url.url"),
        }
        converted["detail"] = (image.get("detail") if isinstance(image, dict) else None) or "auto"
        return converted
    if kind == "file":
        file = part.get("file")
        if not isinstance(file, dict):
            raise _missing(f"{param}.file")
        fields = ("file_data", "file_id", "filename")
        return {"type": "input_file", **{key: file[key] for key in fields if key in file}}
    raise invalid_request(
        f"Invalid value for '{param}.type': {kind!r} parts are not supported"
        + (" (audio is not carried by this gateway)." if kind == "input_audio" else "."),
        f"{param}.type",
        "invalid_value",
    )


def _user_content(content: Any, param: str) -> str | list[Item]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _type_error(param, "a string or an array of parts")
    return [_user_part(part, f"{param}[{index}]") for index, part in enumerate(content)]


def _assistant_content(content: Any, param: str) -> list[Item]:
    """An assistant's text and refusals as output parts (none for ``null`` content)."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "output_text", "text": content, "annotations": []}]
    if not isinstance(content, list):
        raise _type_error(param, "a string, an array of parts or null")
    parts: list[Item] = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text = _string(part.get("text"), f"{where}.text")
            parts.append({"type": "output_text", "text": text, "annotations": []})
        elif kind == "refusal":
            refusal = _string(part.get("refusal"), f"{where}.refusal")
            parts.append({"type": "refusal", "refusal": refusal})
        else:
            raise invalid_request(
                f"Invalid value for '{where}.type': expected 'text' or 'refusal'.",
                f"{where}.type",
                "invalid_value",
            )
    return parts


def _tool_call(call: Any, param: str) -> Item:
    if not isinstance(call, dict):
        raise _type_error(param, "an object")
    call_id = _string(call.get("id"), f"{param}.id")
    if call.get("type", "function") == "custom":
        custom = call.get("custom") or {}
        name = _string(custom.get("name"), f"{param}.custom.name")
        text = _string(custom.get("input"), f"{param}.custom.input")
        return {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": text}
    function = call.get("function")
    if not isinstance(function, dict):
        raise _missing(f"{param}.function")
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": _string(function.get("name"), f"{param}.function.name"),
        "arguments": _string(function.get("arguments"), f"{param}.function.arguments"),
    }


def _assistant(message: Item, param: str) -> list[Item]:
    parts = _assistant_content(message.get("content"), f"{param}.content")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    items: list[Item] = []
    if parts:
        items.append({"type": "message", "role": "assistant", "content": parts})
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _type_error(f"{param}.tool_calls", "an array")
    items += [_tool_call(call, f"{param}.tool_calls[{n}]") for n, call in enumerate(calls)]
    if not items:  # an empty assistant turn still holds its place
        items.append({"type": "message", "role": "assistant", "content": ""})
    return items


def _items(message: Any, param: str) -> list[Item]:
    if not isinstance(message, dict):
        raise _type_error(param, "an object")
    role = message.get("role")
    if role not in _ROLES:
        if role is None:
            raise _missing(f"{param}.role")
        raise invalid_request(
            f"Invalid value for '{param}.role': expected one of {', '.join(_ROLES)}, got {role!r}.",
            f"{param}.role",
            "invalid_value",
        )
    content = message.get("content")
    if role in ("system", "developer"):
        text = _text_only(content, f"{param}.content")
        return [{"type": "message", "role": role, "content": text}]
    if role == "user":
        if content is None:
            raise _missing(f"{param}.content")
        user = _user_content(content, f"{param}.content")
        return [{"type": "message", "role": "user", "content": user}]
    if role == "assistant":
        return _assistant(message, param)
    call_id = _string(message.get("tool_call_id"), f"{param}.tool_call_id")
    output = _text_only(content if content is not None else "", f"{param}.content")
    return [{"type": "function_call_output", "call_id": call_id, "output": output}]


def to_items(messages: list[Any]) -> tuple[list[Item], list[str]]:
    """The input items of ``messages``, and for each item the message it came from."""
    items: list[Item] = []
    origins: list[str] = []
    for index, message in enumerate(messages):
        made = _items(message, f"messages[{index}]")
        items += made
        origins += [f"messages[{index}]"] * len(made)
    custom = {item["call_id"] for item in items if item["type"] == "custom_tool_call"}
    for item in items:  # a custom tool's answer is that tool's own output item
        if item["type"] == "function_call_output" and item["call_id"] in custom:
            item["type"] = "custom_tool_call_output"
    return items, origins
