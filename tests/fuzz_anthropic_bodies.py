"""Hypothesis strategies for requests a client may validly send, shaped to probe the rules
the Messages API has and the Responses API has not: who speaks first, what a system
message may hold, tool schemas and names, sampling with and without thinking.

Each body passes the gateway's own validation; whatever the gateway then sends the strict
fake Messages API must be valid, or the gateway must have refused it itself.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 fake").decode()
CALL_IDS = ["call_1", "call_2", "toolu 3"]
TOOL_NAMES = ["get_weather", "apply_patch", "lookup"]

WORDS = st.sampled_from(["hello", "go on", " ", "", "\n", "why?"])
PARTS = st.one_of(
    WORDS.map(lambda text: {"type": "input_text", "text": text}),
    st.just({"type": "input_image", "image_url": PNG}),
    st.just({"type": "input_file", "file_data": PDF, "filename": "a.pdf"}),
    st.just({"type": "input_file", "file_url": "https://example.com/a.pdf"}),
)
CONTENT = st.one_of(WORDS, st.lists(PARTS, max_size=3))
ASSISTANT_CONTENT = st.one_of(
    WORDS, st.lists(WORDS.map(lambda text: {"type": "output_text", "text": text}), max_size=2)
)


@st.composite
def history_items(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["user", "assistant", "system", "developer", "call", "output", "custom", "custom_out"]
        )
    )
    call_id = draw(st.sampled_from(CALL_IDS))
    name = draw(st.sampled_from(TOOL_NAMES))
    if kind in ("user", "system", "developer"):
        return {"type": "message", "role": kind, "content": draw(CONTENT)}
    if kind == "assistant":
        return {"type": "message", "role": "assistant", "content": draw(ASSISTANT_CONTENT)}
    if kind == "call":
        arguments = draw(st.sampled_from(['{"city": "Paris"}', "{}", "[1]", "not json"]))
        return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    if kind == "custom":
        return {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": "x"}
    output: Any = draw(st.one_of(WORDS, st.lists(PARTS, max_size=2)))
    kind = "function_call_output" if kind == "output" else "custom_tool_call_output"
    return {"type": kind, "call_id": call_id, "output": output}


SCHEMAS = st.one_of(
    st.none(),
    st.just({}),
    st.just({"type": "object", "properties": {"city": {"type": "string"}}}),
    st.just({"properties": {"city": {"type": "string"}}, "required": ["city"]}),
    st.just({"type": "string"}),
    st.just({"type": "array", "items": {"type": "string"}}),
    st.just({"type": ["object", "null"]}),
)


@st.composite
def tools(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["function", "function", "custom", "namespace"]))
    name = draw(st.sampled_from(TOOL_NAMES))
    if kind == "custom":
        return {"type": "custom", "name": name, "description": "a tool"}
    function: dict[str, Any] = {"type": "function", "name": name}
    parameters = draw(SCHEMAS)
    if parameters is not None:
        function["parameters"] = parameters
    if kind == "namespace":
        return {"type": "namespace", "name": "get", "description": "a group", "tools": [function]}
    return function


OPTIONAL = {
    "instructions": st.sampled_from(["Be brief.", ""]),
    "tools": st.lists(tools(), max_size=3),
    "tool_choice": st.sampled_from(["auto", "none", "required"]),
    "temperature": st.sampled_from([0, 0.3, 1, 1.5, 2]),
    "top_p": st.sampled_from([0, 0.5, 0.95, 1]),
    "reasoning": st.sampled_from([{"effort": "low"}, {"effort": "none"}, {"effort": "high"}]),
    "max_output_tokens": st.sampled_from([16, 2048, 4000]),
    "parallel_tool_calls": st.booleans(),
    "stream": st.booleans(),
}


@st.composite
def anthropic_bodies(draw: st.DrawFn, model: str = "claude") -> dict[str, Any]:
    """A request valid for the Responses API, with a history of up to five items."""
    body: dict[str, Any] = {
        "model": model,
        "input": draw(st.one_of(WORDS, st.lists(history_items(), min_size=1, max_size=5))),
    }
    for field in draw(st.lists(st.sampled_from(sorted(OPTIONAL)), max_size=5, unique=True)):
        body[field] = draw(OPTIONAL[field])
    return body
