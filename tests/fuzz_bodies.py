"""Hypothesis strategies for hostile request bodies and query strings.

Bodies start from valid requests and replace one field, or one item, with values of any
JSON type, including deep nesting, NUL characters, lone surrogates, huge numbers and
floats that are not finite (sent as the JSON-ish tokens ``NaN`` and ``Infinity``).
"""

from __future__ import annotations

import base64
import inspect
import json
import math
from typing import Any

from hypothesis import strategies as st

from session.agent_store.calls import CALLS

TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "\x00", "\ud800", "a\udfffb", "²", "-1", "1e999", "resp_x", "conv_x"]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=12,
)


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


HOSTILE = st.one_of(JSON_VALUES, st.integers(60, 80).map(deep))

MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer"]), "content": TEXT}
)
ITEM_TYPES = [
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
    "item_reference",
    "computer_call_output",
]
ITEM_FIELDS = [
    "id",
    "role",
    "content",
    "call_id",
    "name",
    "arguments",
    "output",
    "input",
    "summary",
    "status",
]


@st.composite
def items(draw: st.DrawFn) -> Any:
    """An item of a known type with some fields hostile, or any value at all."""
    if draw(st.booleans()):
        return draw(HOSTILE)
    item: dict[str, Any] = {"type": draw(st.sampled_from(ITEM_TYPES))}
    for field in draw(st.lists(st.sampled_from(ITEM_FIELDS), max_size=4, unique=True)):
        item[field] = draw(st.one_of(HOSTILE, st.lists(MESSAGE, max_size=2)))
    if item["type"] == "message" and "content" in item and draw(st.booleans()):
        item["content"] = [{"type": "input_text", "text": draw(HOSTILE)}]
    return item


RESPONSE_FIELDS = [
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "text",
    "reasoning",
    "metadata",
    "previous_response_id",
    "conversation",
    "store",
    "stream",
    "temperature",
    "top_p",
    "max_output_tokens",
    "parallel_tool_calls",
    "truncation",
    "user",
    "include",
    "background",
]
TOOLS = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["function", "custom", "namespace", "web_search"])},
            optional={"name": HOSTILE, "parameters": HOSTILE, "tools": HOSTILE, "strict": HOSTILE},
        ),
        max_size=3,
    ),
    HOSTILE,
)
# Every kind a tool_choice may pick: named tools, MCP servers, subsets, the built-ins.
BUILT_IN_CHOICES = [
    "file_search",
    "web_search",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "computer",
    "computer_use",
    "computer_use_preview",
    "image_generation",
    "code_interpreter",
    "apply_patch",
    "shell",
    "local_shell",
]
TOOL_NAMES = st.one_of(st.sampled_from(["f", "c", "roll", "add", "mcp__dice__roll"]), HOSTILE)
SERVER_LABELS = st.one_of(st.sampled_from(["dice", "zz", ""]), HOSTILE)
NAMED_CHOICES = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "custom"])}, optional={"name": TOOL_NAMES}
)
MCP_CHOICES = st.fixed_dictionaries(
    {"type": st.just("mcp")}, optional={"server_label": SERVER_LABELS, "name": TOOL_NAMES}
)
ALLOWED_TOOLS_CHOICES = st.fixed_dictionaries(
    {"type": st.just("allowed_tools")},
    optional={
        "mode": st.one_of(st.sampled_from(["auto", "required", "none"]), HOSTILE),
        "tools": st.one_of(
            st.lists(st.one_of(NAMED_CHOICES, MCP_CHOICES, HOSTILE), max_size=3), HOSTILE
        ),
    },
)
BUILT_IN = st.fixed_dictionaries({"type": st.sampled_from([*BUILT_IN_CHOICES, "bogus"])})
TOOL_CHOICES = st.one_of(
    st.sampled_from(["auto", "none", "required", "invalid_choice"]),
    NAMED_CHOICES,
    MCP_CHOICES,
    ALLOWED_TOOLS_CHOICES,
    BUILT_IN,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function", "allowed_tools", "mcp", "file_search", "bogus"])},
        optional={"name": HOSTILE, "mode": HOSTILE, "tools": HOSTILE},
    ),
    HOSTILE,
)


TOOL_KINDS = ["function", "custom", "mcp", *BUILT_IN_CHOICES]


def tool_of_kind(kind: str, mcp_url: str) -> dict[str, Any]:
    """A well-formed tool of ``kind`` (one of :data:`TOOL_KINDS`); the MCP one, labelled
    ``dice``, is the server at ``mcp_url``."""
    if kind == "function":
        return {"type": "function", "name": "f", "parameters": {"type": "object"}}
    if kind == "custom":
        return {"type": "custom", "name": "c"}
    if kind == "mcp":
        return {
            "type": "mcp",
            "server_label": "dice",
            "server_url": mcp_url,
            "require_approval": "never",
        }
    return {"type": kind}


TEXT_CONFIGS = st.one_of(
    st.fixed_dictionaries(
        {
            "format": st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "json_schema", "x"])},
                optional={"name": HOSTILE, "schema": HOSTILE},
            )
        }
    ),
    HOSTILE,
)


@st.composite
def response_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": draw(st.sampled_from(["echo", "chat-model"])),
        "input": draw(st.one_of(TEXT, st.lists(st.one_of(MESSAGE, items()), max_size=3))),
    }
    for field in draw(st.lists(st.sampled_from(RESPONSE_FIELDS), max_size=3, unique=True)):
        if field == "tools":
            body[field] = draw(TOOLS)
        elif field == "tool_choice":
            body[field] = draw(TOOL_CHOICES)
        elif field == "text":
            body[field] = draw(TEXT_CONFIGS)
        elif field == "stream":
            body[field] = draw(st.one_of(st.booleans(), HOSTILE))
        else:
            body[field] = draw(HOSTILE)
    return body


def encode(body: Any) -> bytes:
    """JSON as a careless client writes it: non-finite floats become NaN/Infinity tokens."""
    return json.dumps(body, allow_nan=True).encode()


def has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    return False


QUERY_VALUES = st.one_of(
    st.sampled_from(["²", "-1", "0", "101", "1e3", "", "asc", "desc", "\x00", "%00", "20"]),
    st.text(max_size=6),
)
QUERIES = st.dictionaries(
    st.sampled_from(["limit", "order", "after", "before", "include"]), QUERY_VALUES, max_size=3
)
CONSOLE_PATHS = [
    "whoami",
    "search",
    "projects",
    "responses",
    "responses/{id}",
    "responses/{id}/chain",
    "conversations",
    "conversations/{id}",
    "store/conversations",
    "store/conversations/{id}",
    "usage",
    "keys",
]
CONSOLE_PARAMS = [
    "q", "project", "model", "status", "key", "since", "until", "after", "limit", "bucket",
    "by", "before", "cursor", "order",
]  # fmt: skip
# What a careless or hostile client puts in a console query: numbers Python's float() takes
# but no time is (NaN, infinities, past float range), strings, empty, unicode.
CONSOLE_VALUES = st.one_of(
    QUERY_VALUES,
    st.sampled_from(
        ["NaN", "nan", "-nan", "inf", "-inf", "Infinity", "1e308", "-1e308", "1" + "0" * 400,
         "-5", "-1e9", "9" * 30, "0x10", "1_000", " 1 ", "١٢", "hour", "day", "model", "key"]
    ),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)  # fmt: skip
CONSOLE_QUERIES = st.dictionaries(st.sampled_from(CONSOLE_PARAMS), CONSOLE_VALUES, max_size=5)


# -- the agent Store (/v1/store) ------------------------------------------------------------

STORE_ROUTES = [
    ("POST", "/v1/store/conversations"),
    ("GET", "/v1/store/conversations"),
    ("GET", "/v1/store/conversations/{id}"),
    ("PATCH", "/v1/store/conversations/{id}"),
    ("DELETE", "/v1/store/conversations/{id}"),
    ("POST", "/v1/store/conversations/{id}/messages"),
    ("GET", "/v1/store/conversations/{id}/messages"),
    ("POST", "/v1/store/conversations/{id}/pop"),
    ("POST", "/v1/store/conversations/{id}/clear"),
    ("GET", "/v1/store/conversations/c1/state/{id}"),
    ("PUT", "/v1/store/conversations/{id}/state/{id}"),
    ("DELETE", "/v1/store/conversations/c1/state/{id}"),
    ("GET", "/v1/store/messages/{id}"),
    ("PATCH", "/v1/store/messages/{id}"),
    ("DELETE", "/v1/store/messages/{id}"),
    ("POST", "/v1/store/claude-bindings"),
]
# Fields the routes take, and names a careless client (or one probing keyword arguments) sends.
STORE_FIELDS = [
    "conversationId",
    "metadata",
    "messages",
    "payload",
    "role",
    "type",
    "messageId",
    "value",
    "self",
    "message_id",
    "fields",
    "project",
]
STORE_IDS = st.one_of(st.sampled_from(["c1", "m1", "k"]), TEXT)
STORE_MESSAGE = st.fixed_dictionaries(
    {"payload": HOSTILE},
    optional={name: HOSTILE for name in ("role", "type", "metadata", "messageId", "seq")},
)


@st.composite
def store_bodies(draw: st.DrawFn) -> Any:
    """A body for any ``/v1/store`` route: known fields and unknown ones, any values."""
    if draw(st.integers(0, 9)) == 0:
        return draw(HOSTILE)
    body = draw(
        st.dictionaries(st.one_of(st.sampled_from(STORE_FIELDS), TEXT), HOSTILE, max_size=3)
    )
    if draw(st.booleans()):
        body["messages"] = draw(st.lists(st.one_of(STORE_MESSAGE, HOSTILE), max_size=3))
    return body


def forged_cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(position, allow_nan=True).encode()).decode()


CURSORS = st.one_of(
    HOSTILE.map(forged_cursor),
    st.fixed_dictionaries({"t": HOSTILE, "i": HOSTILE}).map(forged_cursor),
    st.fixed_dictionaries({"a": HOSTILE, "u": HOSTILE}).map(forged_cursor),
    st.sampled_from(["a.b", ".", "e30=", "e30.AAAA"]),
    TEXT,
)
STORE_QUERIES = st.dictionaries(
    st.sampled_from(["limit", "order", "cursor"]), st.one_of(QUERY_VALUES, CURSORS), max_size=3
)
CALL_NAMES = [*CALLS, "claude.bogus", "", "langgraph."]
CALL_ARGUMENTS = sorted(
    {name for call in CALLS.values() for name in inspect.signature(call.make).parameters} | {"self"}
)
CLAUDE_KEYS = st.fixed_dictionaries(
    {"project_key": TEXT, "session_id": TEXT}, optional={"subpath": TEXT, "x": HOSTILE}
)
STORE_OPS = st.fixed_dictionaries(
    {"op": st.sampled_from(["get", "put", "search", "list_namespaces", "x"])},
    optional={
        "namespace": st.one_of(st.lists(TEXT, max_size=2), HOSTILE),
        "namespace_prefix": st.one_of(st.lists(TEXT, max_size=2), HOSTILE),
        "key": TEXT,
        "value": HOSTILE,
        "filter": HOSTILE,
        "limit": HOSTILE,
        "offset": HOSTILE,
        "match_conditions": HOSTILE,
        "max_depth": HOSTILE,
    },
)
WRITES = st.tuples(st.one_of(st.integers(), HOSTILE), TEXT, HOSTILE).map(list)
CALL_VALUES = st.one_of(
    HOSTILE, CLAUDE_KEYS, st.lists(st.one_of(STORE_OPS, WRITES, HOSTILE), max_size=3)
)
CALL_BODIES = st.dictionaries(st.sampled_from(CALL_ARGUMENTS), CALL_VALUES, max_size=6)
