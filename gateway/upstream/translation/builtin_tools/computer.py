"""``computer`` and ``computer_use_preview``: the model acts on a screen the client drives;
each action's result is a screenshot, given back to the model as an image."""

from __future__ import annotations

from ...errors import UnsupportedInput
from ...results import Item
from .base import Result, integer, strings

_ACTIONS = (
    "click",
    "double_click",
    "drag",
    "keypress",
    "move",
    "screenshot",
    "scroll",
    "type",
    "wait",
)
_POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}
_SCHEMA: Item = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": list(_ACTIONS), "description": "The action."},
        "x": {"type": "integer", "description": "Pixels from the left (click, move, scroll)."},
        "y": {"type": "integer", "description": "Pixels from the top (click, move, scroll)."},
        "button": {
            "type": "string",
            "enum": ["left", "right", "wheel", "back", "forward"],
            "description": "The mouse button of a click.",
        },
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Keys to press (keypress), or held during a mouse action.",
        },
        "text": {"type": "string", "description": "What to type."},
        "path": {"type": "array", "items": _POINT, "description": "The points of a drag."},
        "scroll_x": {"type": "integer", "description": "Horizontal scroll distance."},
        "scroll_y": {"type": "integer", "description": "Vertical scroll distance."},
    },
    "required": ["type"],
}
_POINTED = ("click", "double_click", "move", "scroll")


class Computer:
    tool_types = frozenset({"computer", "computer_use_preview"})
    call_type = "computer_call"
    output_type = "computer_call_output"
    id_prefix = "cu"

    def refusal(self, tool: Item) -> str | None:
        return None

    def function(self, tool: Item) -> tuple[str, str, Item]:
        about = "Act on the user's screen: one mouse or keyboard action per call. "
        width, height = tool.get("display_width"), tool.get("display_height")
        if width and height:
            about += f"The display is {width}x{height} pixels"
            if tool.get("environment"):
                about += f" ({tool['environment']})"
            about += ". "
        about += "Each call's result is a screenshot taken after the action."
        return "computer", about, _SCHEMA

    def call(self, arguments: Item) -> Item:
        kind = arguments.get("type")
        action: Item = {"type": kind if kind in _ACTIONS else "screenshot"}
        kind = action["type"]
        if kind in _POINTED:
            action["x"] = integer(arguments.get("x")) or 0
            action["y"] = integer(arguments.get("y")) or 0
        if kind == "click":
            action["button"] = arguments.get("button") or "left"
        if kind == "scroll":
            action["scroll_x"] = integer(arguments.get("scroll_x")) or 0
            action["scroll_y"] = integer(arguments.get("scroll_y")) or 0
        if kind == "type":
            action["text"] = str(arguments.get("text") or "")
        if kind == "drag":
            given = arguments.get("path")
            points = given if isinstance(given, list) else []
            action["path"] = [
                {"x": integer(p.get("x")) or 0, "y": integer(p.get("y")) or 0}
                for p in points
                if isinstance(p, dict)
            ]
        keys = strings(arguments.get("keys"))
        if kind == "keypress" or (keys and kind != "type"):
            action["keys"] = keys
        return {"action": action, "pending_safety_checks": []}

    def arguments(self, call: Item) -> Item:
        action = call.get("action")
        if not isinstance(action, dict):
            actions = call.get("actions")
            action = actions[0] if isinstance(actions, list) and actions else {}
        return dict(action) if isinstance(action, dict) else {}

    def result(self, output: Item, where: str) -> Result:
        screenshot = output.get("output")
        url = screenshot.get("image_url") if isinstance(screenshot, dict) else None
        if not isinstance(url, str) or not url:
            raise UnsupportedInput(
                "A screenshot must be given by 'image_url' (a data URL or an https URL) "
                "for this model.",
                f"{where}.output",
            )
        return [{"type": "input_image", "image_url": url, "detail": "auto"}]
