"""``apply_patch``: the model creates, updates or deletes a file with a V4A diff."""

from __future__ import annotations

import json

from ...results import Item
from .base import Result

_OPERATIONS = ("create_file", "update_file", "delete_file")
_SCHEMA: Item = {
    "type": "object",
    "properties": {
        "type": {
            "type": "string",
            "enum": list(_OPERATIONS),
            "description": "What to do to the file.",
        },
        "path": {"type": "string", "description": "The file's path, relative to the project."},
        "diff": {
            "type": "string",
            "description": "The V4A diff: for create_file every line prefixed with '+'; for "
            "update_file hunks starting '@@' with context lines (' '), removed lines ('-') "
            "and added lines ('+'). Not given for delete_file.",
        },
    },
    "required": ["type", "path"],
}
_ABOUT = (
    "Create, update or delete one file of the user's project with a V4A diff. "
    "The result says whether the change applied."
)


class ApplyPatch:
    tool_types = frozenset({"apply_patch"})
    call_type = "apply_patch_call"
    output_type = "apply_patch_call_output"
    id_prefix = "apc"

    def refusal(self, tool: Item) -> str | None:
        return None

    def function(self, tool: Item) -> tuple[str, str, Item]:
        return "apply_patch", _ABOUT, _SCHEMA

    def call(self, arguments: Item) -> Item:
        kind = arguments.get("type")
        if kind not in _OPERATIONS:
            kind = "update_file" if arguments.get("diff") else "delete_file"
        operation: Item = {"type": kind, "path": str(arguments.get("path") or "")}
        if kind != "delete_file":
            operation["diff"] = str(arguments.get("diff") or "")
        return {"operation": operation}

    def arguments(self, call: Item) -> Item:
        operation = call.get("operation")
        return dict(operation) if isinstance(operation, dict) else {}

    def result(self, output: Item, where: str) -> Result:
        answer: Item = {"status": output.get("status", "completed")}
        if output.get("output"):
            answer["output"] = output["output"]
        return json.dumps(answer)
