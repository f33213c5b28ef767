"""``shell`` (run in the client's local environment) and the older ``local_shell``."""

from __future__ import annotations

import json

from ...results import Item
from .base import Result, as_text, integer, strings

_SHELL_SCHEMA: Item = {
    "type": "object",
    "properties": {
        "commands": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Shell commands to run, in order, each in a fresh shell.",
        },
        "timeout_ms": {
            "type": "integer",
            "description": "How long the commands may run, in milliseconds.",
        },
        "max_output_length": {
            "type": "integer",
            "description": "How many characters of stdout and stderr to keep.",
        },
    },
    "required": ["commands"],
}
_SHELL_ABOUT = (
    "Run shell commands in the user's local environment. Each command's stdout, stderr "
    "and exit code (or a timeout) come back as the result."
)
_LOCAL_SCHEMA: Item = {
    "type": "object",
    "properties": {
        "command": {
            "type": "array",
            "items": {"type": "string"},
            "description": 'The program and its arguments, e.g. ["ls", "-la"].',
        },
        "working_directory": {"type": "string", "description": "Where to run it."},
        "timeout_ms": {"type": "integer", "description": "Time limit in milliseconds."},
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Environment variables to set.",
        },
    },
    "required": ["command"],
}
_LOCAL_ABOUT = "Run a command on the user's machine; its output comes back as the result."
_HOSTED = frozenset({"container_auto", "container_reference"})


class Shell:
    tool_types = frozenset({"shell"})
    call_type = "shell_call"
    output_type = "shell_call_output"
    id_prefix = "sh"

    def refusal(self, tool: Item) -> str | None:
        environment = tool.get("environment")
        kind = environment.get("type") if isinstance(environment, dict) else None
        if kind in _HOSTED:
            return f"a shell in a hosted container ('{kind}')"
        return None

    def function(self, tool: Item) -> tuple[str, str, Item]:
        return "shell", _SHELL_ABOUT, _SHELL_SCHEMA

    def call(self, arguments: Item) -> Item:
        commands = strings(arguments.get("commands", arguments.get("command")))
        action: Item = {"commands": commands}
        for key in ("timeout_ms", "max_output_length"):
            action[key] = integer(arguments.get(key))
        return {"action": action, "environment": {"type": "local"}}

    def arguments(self, call: Item) -> Item:
        action = call.get("action") or {}
        fields = ("commands", "timeout_ms", "max_output_length")
        return {key: action[key] for key in fields if action.get(key) is not None}

    def result(self, output: Item, where: str) -> Result:
        entries = output.get("output")
        kept = [
            {key: entry.get(key) for key in ("stdout", "stderr", "outcome") if key in entry}
            for entry in (entries if isinstance(entries, list) else [])
            if isinstance(entry, dict)
        ]
        return json.dumps(kept)


class LocalShell:
    tool_types = frozenset({"local_shell"})
    call_type = "local_shell_call"
    output_type = "local_shell_call_output"
    id_prefix = "lsh"

    def refusal(self, tool: Item) -> str | None:
        return None

    def function(self, tool: Item) -> tuple[str, str, Item]:
        return "local_shell", _LOCAL_ABOUT, _LOCAL_SCHEMA

    def call(self, arguments: Item) -> Item:
        env = arguments.get("env")
        action: Item = {
            "type": "exec",
            "command": strings(arguments.get("command", arguments.get("commands"))),
            "env": {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
            "timeout_ms": integer(arguments.get("timeout_ms")),
            "working_directory": arguments.get("working_directory")
            if isinstance(arguments.get("working_directory"), str)
            else None,
        }
        return {"action": action}

    def arguments(self, call: Item) -> Item:
        action = call.get("action") or {}
        fields = ("command", "working_directory", "timeout_ms", "env")
        return {key: action[key] for key in fields if action.get(key)}

    def result(self, output: Item, where: str) -> Result:
        return as_text(output.get("output", ""))
