"""Shape checks of request values pydantic types only loosely: items, tools, choices, formats.

Each check raises a 400 naming the parameter (``input[2].content[0].text``), so that
nothing malformed is ever stored, sent upstream, or read back broken later.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import APIError, invalid_request

MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
ITEM_TYPES = frozenset(
    {
        "message",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "web_search_call",
        "function_call",
        "function_call_output",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "configuration_update",
        "reasoning",
        "compaction",
        "compaction_trigger",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "custom_tool_call",
        "custom_tool_call_output",
        "item_reference",
        "program",
        "program_output",
    }
)
TOOL_CHOICE_MODES = frozenset({"none", "auto", "required"})
HOSTED_TOOL_CHOICES = frozenset(
    {
        "file_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "computer",
        "computer_use",
        "computer_use_preview",
        "image_generation",
        "code_interpreter",
        "apply_patch",
        "shell",
    }
)
TEXT_FORMATS = frozenset({"text", "json_object", "json_schema"})
REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh"})
REASONING_SUMMARIES = frozenset({"auto", "concise", "detailed"})
REASONING_CONTEXTS = frozenset({"auto", "current_turn", "all_turns"})
_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _type_error(param: str, expected: str) -> APIError:
    return invalid_request(
        f"Invalid type for '{param}': expected {expected}.", param=param, code="invalid_type"
    )


def _value_error(param: str, message: str) -> APIError:
    return invalid_request(
        f"Invalid value for '{param}': {message}", param=param, code="invalid_value"
    )


def _optional(
    obj: dict[str, Any], key: str, kind: type | tuple[type, ...], param: str, expected: str
) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kind):
        raise _type_error(f"{param}.{key}", expected)
    return value


def _required_str(obj: dict[str, Any], key: str, param: str) -> str:
    value = obj.get(key)
    if value is None:
        raise invalid_request(
            f"Missing required parameter: '{param}.{key}'.",
            param=f"{param}.{key}",
            code="missing_required_parameter",
        )
    if not isinstance(value, str):
        raise _type_error(f"{param}.{key}", "a string")
    return value


def _one_of(value: Any, choices: frozenset[str], param: str) -> None:
    if value is not None and (not isinstance(value, str) or value not in choices):
        raise _value_error(param, f"expected one of {', '.join(sorted(choices))}, got {value!r}.")


def check_content(content: Any, param: str) -> None:
    """Message content: a string, or a list of parts each with a string ``type``."""
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _type_error(param, "a string or an array")
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        if not isinstance(part, dict):
            raise _type_error(where, "an object")
        kind = _required_str(part, "type", where)
        if kind in TEXT_PARTS:
            _required_str(part, "text", where)
        elif kind == "refusal":
            _required_str(part, "refusal", where)
        else:
            for key in ("image_url", "file_id", "file_url", "file_data", "filename", "detail"):
                _optional(part, key, str, where, "a string")
        breakpoint = part.get("prompt_cache_breakpoint")
        if breakpoint is not None:
            check_breakpoint(breakpoint, f"{where}.prompt_cache_breakpoint")


CACHE_TTLS = frozenset({"30m", "12h"})


def check_breakpoint(breakpoint: Any, param: str) -> None:
    """A part's ``prompt_cache_breakpoint``: ``mode`` ``explicit``, an optional ``ttl``."""
    if not isinstance(breakpoint, dict):
        raise _type_error(param, "an object")
    _one_of(_required_str(breakpoint, "mode", param), frozenset({"explicit"}), f"{param}.mode")
    _one_of(breakpoint.get("ttl"), CACHE_TTLS, f"{param}.ttl")


def check_prompt_cache_options(options: Any) -> None:
    """``prompt_cache_options``: its ``mode`` and ``ttl``, as OpenAI takes them."""
    if options is None:
        return
    param = "prompt_cache_options"
    if not isinstance(options, dict):
        raise _type_error(param, "an object")
    _one_of(options.get("mode"), frozenset({"implicit", "explicit"}), f"{param}.mode")
    _one_of(options.get("ttl"), CACHE_TTLS, f"{param}.ttl")
    _optional(options, "prewarm", bool, param, "a boolean")
    _optional(options, "comparison_response_id", str, param, "a string")


def _check_output(item: dict[str, Any], param: str) -> None:
    output = item.get("output")
    if not isinstance(output, str):
        check_content(output, f"{param}.output")


def check_item(item: Any, param: str) -> None:
    """One input item of a type OpenAI knows, with the fields the gateway reads checked."""
    if not isinstance(item, dict):
        raise _type_error(param, "an object")
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise _type_error(f"{param}.type", "a string")
    if kind not in ITEM_TYPES:
        raise _value_error(f"{param}.type", f"unknown input item type {kind!r}.")
    _optional(item, "id", str, param, "a string")
    _optional(item, "status", str, param, "a string")
    if kind == "message":
        role = item.get("role")
        if role is None:
            raise invalid_request(
                f"Missing required parameter: '{param}.role'.",
                param=f"{param}.role",
                code="missing_required_parameter",
            )
        _one_of(role, MESSAGE_ROLES, f"{param}.role")
        check_content(item.get("content"), f"{param}.content")
    elif kind in ("function_call", "custom_tool_call"):
        _required_str(item, "call_id", param)
        _required_str(item, "name", param)
        _required_str(item, "arguments" if kind == "function_call" else "input", param)
        _optional(item, "namespace", str, param, "a string")
    elif kind in ("function_call_output", "custom_tool_call_output"):
        _required_str(item, "call_id", param)
        _check_output(item, param)
        _optional(item, "name", str, param, "a string")
        _optional(item, "namespace", str, param, "a string")
    elif kind == "additional_tools":
        tools = item.get("tools")
        if not isinstance(tools, list):
            raise _type_error(f"{param}.tools", "an array")
        for index, tool in enumerate(tools):
            check_tool(tool, f"{param}.tools[{index}]")
    elif kind == "reasoning":
        for key in ("summary", "content"):
            parts = _optional(item, key, list, param, "an array")
            if parts is not None:
                check_content(parts, f"{param}.{key}")
        _optional(item, "encrypted_content", str, param, "a string")
    elif kind == "item_reference":
        _required_str(item, "id", param)
    elif kind.endswith("_output"):
        _required_str(item, "call_id", param)


def check_items(items: list[Any], name: str) -> list[dict[str, Any]]:
    for index, item in enumerate(items):
        check_item(item, f"{name}[{index}]")
    return items


def check_tool(tool: Any, param: str, *, nested: bool = False) -> None:
    if not isinstance(tool, dict):
        raise _type_error(param, "an object")
    kind = _required_str(tool, "type", param)
    if kind in ("function", "custom"):
        name = _required_str(tool, "name", param)
        if not _FUNCTION_NAME.match(name):
            raise _value_error(
                f"{param}.name",
                "tool names contain only a-z, A-Z, 0-9, underscores and dashes, at most 64.",
            )
        _optional(tool, "description", str, param, "a string")
        if kind == "function":
            _optional(tool, "parameters", dict, param, "an object")
            _optional(tool, "strict", bool, param, "a boolean")
        else:
            _optional(tool, "format", dict, param, "an object")
    elif kind == "namespace" and not nested:
        _required_str(tool, "name", param)
        inner = tool.get("tools")
        if not isinstance(inner, list):
            raise _type_error(f"{param}.tools", "an array")
        for index, child in enumerate(inner):
            check_tool(child, f"{param}.tools[{index}]", nested=True)


def check_tool_choice(choice: Any) -> None:
    param = "tool_choice"
    if isinstance(choice, str):
        _one_of(choice, TOOL_CHOICE_MODES, param)
        return
    if not isinstance(choice, dict):
        raise _type_error(param, "a string or an object")
    kind = _required_str(choice, "type", param)
    if kind in ("function", "custom"):
        _required_str(choice, "name", param)
    elif kind == "allowed_tools":
        _one_of(choice.get("mode"), frozenset({"auto", "required"}), f"{param}.mode")
        tools = choice.get("tools")
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise _type_error(f"{param}.tools", "an array of objects")
    elif kind == "mcp":
        _required_str(choice, "server_label", param)
        _optional(choice, "name", str, param, "a string")
    elif kind not in HOSTED_TOOL_CHOICES:
        raise _value_error(f"{param}.type", f"unknown tool choice type {kind!r}.")


def check_tool_choice_target(choice: Any, tools: list[Any]) -> None:
    """A 400 naming ``tool_choice`` when it picks an MCP server no ``mcp`` tool names.
    (Whether the server has the tool it names is known once its tools are listed.)"""
    if not isinstance(choice, dict) or choice.get("type") != "mcp":
        return
    label = choice["server_label"]
    labels = {
        tool.get("server_label")
        for tool in tools
        if isinstance(tool, dict) and tool.get("type") == "mcp"
    }
    if label not in labels:
        raise invalid_request(
            f"Tool choice 'mcp' names the server label {label!r}, which no 'mcp' tool in "
            "'tools' has.",
            param="tool_choice",
            code="invalid_value",
        )


def check_text(text: dict[str, Any] | None) -> None:
    if text is None:
        return
    _one_of(text.get("verbosity"), frozenset({"low", "medium", "high"}), "text.verbosity")
    fmt = _optional(text, "format", dict, "text", "an object")
    if fmt is None:
        return
    kind = _required_str(fmt, "type", "text.format")
    _one_of(kind, TEXT_FORMATS, "text.format.type")
    if kind == "json_schema":
        _required_str(fmt, "name", "text.format")
        if not isinstance(fmt.get("schema"), dict):
            raise _type_error("text.format.schema", "an object")
        _optional(fmt, "strict", bool, "text.format", "a boolean")
        _optional(fmt, "description", str, "text.format", "a string")


def check_reasoning(reasoning: dict[str, Any] | None) -> None:
    if reasoning is not None:
        _one_of(reasoning.get("effort"), REASONING_EFFORTS, "reasoning.effort")
        _one_of(reasoning.get("summary"), REASONING_SUMMARIES, "reasoning.summary")
        _one_of(reasoning.get("context"), REASONING_CONTEXTS, "reasoning.context")
