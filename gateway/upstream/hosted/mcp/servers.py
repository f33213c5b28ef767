"""The ``mcp`` tools of a request as servers to connect to: checked, named and allowed.

Each ``{"type": "mcp", ...}`` tool becomes a :class:`Server`: its label, URL, the headers
sent to it (never stored), which of its tools the model may see and which need the
client's approval. A URL must be on ``mcp.allowed_servers`` when that is set (matched by
its parts: :mod:`gateway.url_prefixes`); one that is
not listed must not reach a loopback, link-local or private address: every address its
host resolves to is checked before the turn starts, and each connection goes to an
address checked as it was resolved (:mod:`..pinned`), redirects included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ....config_sections import McpSettings
from ....errors import APIError, invalid_request
from ....url_prefixes import covered, url_parts
from ...results import Item
from ...transport.addresses import AddressRefused, Resolver, public_addresses

SECRET_FIELDS = ("headers", "authorization")


@dataclass(frozen=True)
class Server:
    """One ``mcp`` tool of the request, ``index`` its place in ``tools``."""

    index: int
    label: str
    url: str
    headers: dict[str, str] = field(repr=False)
    description: str | None
    allowed: frozenset[str] | None  # tool names; None for every tool
    read_only: bool
    approval: Any  # "always", "never" or the per-tool object
    listed: bool  # the operator listed the URL: private addresses allowed

    def offers(self, name: str, annotations: Any) -> bool:
        """Whether the model may see the server's tool ``name``."""
        if self.allowed is not None and name not in self.allowed:
            return False
        hints = annotations if isinstance(annotations, dict) else {}
        return not self.read_only or hints.get("readOnlyHint") is True

    def needs_approval(self, name: str) -> bool:
        """OpenAI's rule: ``always`` unless ``never``, or a per-tool object naming it."""
        if self.approval == "never":
            return False
        if isinstance(self.approval, dict):
            never = (self.approval.get("never") or {}).get("tool_names") or []
            always = (self.approval.get("always") or {}).get("tool_names") or []
            if name in always:
                return True
            return name not in never
        return True


def scrubbed(tools: list[Item] | None) -> list[Item] | None:
    """``tools`` without the secrets an ``mcp`` tool carries (kept for storage and echo)."""
    if not tools:
        return tools
    return [
        {k: v for k, v in tool.items() if k not in SECRET_FIELDS}
        if isinstance(tool, dict) and tool.get("type") == "mcp"
        else tool
        for tool in tools
    ]


def has_mcp(tools: Any) -> bool:
    return isinstance(tools, list) and any(
        isinstance(tool, dict) and tool.get("type") == "mcp" for tool in tools
    )


MCP_ITEMS = frozenset(
    {"mcp_list_tools", "mcp_call", "mcp_approval_request", "mcp_approval_response"}
)


def holds_mcp(
    items: list[Item], own_count: int, history_types: frozenset[str | None] | None
) -> bool:
    """Whether ``items`` (the history, then the request's ``own_count`` items) hold MCP
    items; ``history_types``, when known, spares a scan of the history."""
    scanned = items[len(items) - own_count :] if history_types is not None else items
    if history_types is not None and not history_types.isdisjoint(MCP_ITEMS):
        return True
    return any(item.get("type") in MCP_ITEMS for item in scanned)


def _allowed_tools(value: Any, param: str) -> tuple[frozenset[str] | None, bool]:
    if value is None:
        return None, False
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return frozenset(value), False
    if isinstance(value, dict):
        names = value.get("tool_names")
        if names is not None and not (
            isinstance(names, list) and all(isinstance(n, str) for n in names)
        ):
            raise invalid_request(
                f"Invalid '{param}.tool_names': expected an array of strings.",
                param=f"{param}.tool_names",
            )
        read_only = value.get("read_only")
        return (frozenset(names) if names is not None else None), read_only is True
    raise invalid_request(
        f"Invalid '{param}': expected an array of tool names or a filter object.", param=param
    )


def _approval(value: Any, param: str) -> Any:
    if value is None:
        return "always"
    if value in ("always", "never"):
        return value
    if isinstance(value, dict) and set(value) <= {"always", "never"}:
        for key, rule in value.items():
            names = rule.get("tool_names") if isinstance(rule, dict) else None
            if not isinstance(rule, dict) or not (
                names is None
                or (isinstance(names, list) and all(isinstance(n, str) for n in names))
            ):
                raise invalid_request(
                    f"Invalid '{param}.{key}': expected an object with 'tool_names', an "
                    "array of strings.",
                    param=f"{param}.{key}",
                )
        return value
    raise invalid_request(
        f"Invalid '{param}': expected 'always', 'never' or an object of 'always' and 'never'.",
        param=param,
    )


def _text(tool: Item, key: str, param: str) -> str | None:
    value = tool.get(key)
    if value is not None and not isinstance(value, str):
        raise invalid_request(
            f"Invalid '{param}.{key}': expected a string.", param=f"{param}.{key}"
        )
    return value


def servers(tools: list[Item], settings: McpSettings) -> list[Server]:
    """The request's ``mcp`` tools as servers; a 400 naming the field for a bad one.

    Addresses are checked later, on connecting (:func:`check_address`).
    """
    found: list[Server] = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "mcp":
            continue
        param = f"tools[{index}]"
        label = _text(tool, "server_label", param)
        if not label:
            raise invalid_request(
                f"Missing required parameter: '{param}.server_label'.",
                param=f"{param}.server_label",
                code="missing_required_parameter",
            )
        if any(server.label == label for server in found):
            raise invalid_request(
                f"Duplicate MCP server_label {label!r}: each server needs a label of its own.",
                param=f"{param}.server_label",
            )
        url = _text(tool, "server_url", param)
        headers = tool.get("headers") or {}
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise invalid_request(
                f"Invalid '{param}.headers': expected an object of strings.",
                param=f"{param}.headers",
            )
        headers = dict(headers)
        authorization = _text(tool, "authorization", param)
        if authorization:
            headers["Authorization"] = f"Bearer {authorization}"
        description = _text(tool, "server_description", param)
        operator = settings.servers.get(label)
        if url is None:
            if operator is None:
                raise invalid_request(
                    f"Missing '{param}.server_url': no MCP server is configured under the "
                    f"label {label!r}.",
                    param=f"{param}.server_url",
                    code="missing_required_parameter",
                )
            url, headers = operator.url, {**operator.headers, **headers}
            description = description or operator.description
            listed = True
        else:
            listed, url = _check_url(url, settings, f"{param}.server_url")
        allowed, read_only = _allowed_tools(tool.get("allowed_tools"), f"{param}.allowed_tools")
        approval = _approval(tool.get("require_approval"), f"{param}.require_approval")
        found.append(
            Server(index, label, url, headers, description, allowed, read_only, approval, listed)
        )
    return found


def _check_url(url: str, settings: McpSettings, param: str) -> tuple[bool, str]:
    """Whether the operator listed ``url``, and the URL to reach (its path resolved when
    listed: what was matched is what is fetched); a 400 for one off the list or not
    HTTP(S)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid_request(
            f"Invalid '{param}': an MCP server URL starts with http:// or https:// and names "
            "a host.",
            param=param,
        )
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
    except ValueError:
        raise invalid_request(
            f"Invalid '{param}': its port is not a number from 0 to 65535.", param=param
        ) from None
    if settings.allowed_servers is None:
        return False, url
    try:
        matched = url_parts(url)
    except ValueError as why:
        raise refused(param, str(why)) from None
    if covered(matched, settings.allowed_servers):
        return True, matched.url
    raise invalid_request(
        f"The MCP server URL in '{param}' is not allowed by this gateway.",
        param=param,
        code="mcp_server_not_allowed",
    )


async def check_address(url: str, param: str, resolver: Resolver) -> None:
    """A 400 naming ``param`` when the host of ``url`` resolves to any address that is not
    public (:func:`~..addresses.is_public`), or does not resolve. The connection checks
    again, the address it connects to (:class:`~..pinned.PinnedTransport`)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        await public_addresses(parts.hostname or "", port, resolver)
    except AddressRefused as refusal:
        raise refused(param, refusal.reason) from None


def refused(param: str, why: str) -> APIError:
    """The 400 for an MCP server URL in ``param`` the gateway will not reach."""
    return invalid_request(
        f"The MCP server URL in '{param}' is not allowed: {why}.",
        param=param,
        code="mcp_server_not_allowed",
    )
