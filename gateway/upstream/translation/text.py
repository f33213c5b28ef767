"""The text of an item's content, for the wires that carry it as one string."""

from __future__ import annotations

from typing import Any


def text_of(content: Any) -> str:
    """A string's text, a list of parts' texts joined, else the value as a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else str(content)
