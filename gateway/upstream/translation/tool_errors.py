"""A tool output that reports a failure (``is_error: true`` on the item, as a Messages
client's ``tool_result`` says it): Claude reads the flag itself; a wire without one is sent
the output marked in its text, as the gateway tells the model of its own tools' errors."""

from __future__ import annotations

from typing import Any

ERROR_MARK = "Error: "


def is_failed_output(item: dict[str, Any]) -> bool:
    """Whether ``item``, a tool call's output, reports that the call failed."""
    return item.get("is_error") is True


def marked_output(output: Any) -> Any:
    """A failed call's ``output`` (a string or input parts) with the error mark before it."""
    if isinstance(output, list):
        return [{"type": "input_text", "text": ERROR_MARK}, *output]
    return ERROR_MARK + ("" if output is None else str(output))


def wire_output(item: dict[str, Any]) -> Any:
    """The output a wire without an error flag sends for ``item``."""
    output = item.get("output")
    return marked_output(output) if is_failed_output(item) else output


def without_error_flag(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` for a wire that has no error flag: the flag dropped, the output marked."""
    if "is_error" not in item:
        return item
    kept = {key: value for key, value in item.items() if key != "is_error"}
    if is_failed_output(item):
        kept["output"] = marked_output(item.get("output"))
    return kept
