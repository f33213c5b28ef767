"""A provider's failures in words: what the gateway tells clients and logs when a call
goes wrong, with the provider's secrets scrubbed out."""

from __future__ import annotations

import errno
import os
import re
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from ...config import ProviderSettings
from ..errors import UpstreamError

MAX_RELAYED_MESSAGE = 1000
_MASKED_SECRET = re.compile(r"\S*\*{4,}\S*")


def scrub(text: str, settings: ProviderSettings) -> str:
    """``text`` without the provider's secrets, cut to :data:`MAX_RELAYED_MESSAGE`.

    A key a provider quotes half masked (``sk-proj-****abcd``) goes whole: its visible
    ends are the gateway's, not the client's to see.
    """
    keys = (settings.api_key or "", *(each.key for each in settings.api_keys))
    for secret in (*keys, *settings.headers.values()):
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    if "****" in text:
        text = _MASKED_SECRET.sub("***", text)
    if len(text) > MAX_RELAYED_MESSAGE:
        text = text[:MAX_RELAYED_MESSAGE] + "…"
    return text


def error_fields(content: bytes) -> tuple[str, str | None, str | None]:
    """The message, type and code of an upstream error body, whatever its shape."""
    try:
        body: Any = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content.decode("utf-8", "replace"), None, None
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or orjson.dumps(error).decode()
        kind, code = error.get("type"), error.get("code")
        return (
            str(message),
            kind if isinstance(kind, str) else None,
            str(code) if isinstance(code, str | int) else None,
        )
    return str(error), None, None


def describe_stream_failure(name: str, error: BaseException) -> str:
    """The message recorded when an answer breaks after it started."""
    if isinstance(error, UpstreamError):
        return error.message
    if isinstance(error, TimeoutError):
        return f"The upstream provider '{name}' stopped answering mid-stream."
    return f"The answer from upstream provider '{name}' broke off ({type(error).__name__})."


def connection_failure(error: aiohttp.ClientError) -> str:
    """What went wrong between the gateway and a provider, in words an operator acts on:
    the name that did not resolve, the TLS failure, the refusal or reset and its errno."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        certificate = error.certificate_error
        reason = getattr(certificate, "verify_message", None) or str(certificate)
        return f"TLS certificate verification failed ({reason})"
    if isinstance(error, aiohttp.ClientSSLError):
        return f"TLS handshake failed ({_tls_reason(error.os_error)})"
    if isinstance(error, aiohttp.ClientConnectorError):
        if isinstance(error, aiohttp.ClientConnectorDNSError) or isinstance(
            error.os_error, socket.gaierror
        ):
            reason = error.os_error.strerror or str(error.os_error)
            return f"DNS lookup of {error.host} failed ({reason})"
        return _os_failure(error.os_error)
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without answering"
    if isinstance(error, OSError):  # a reset, a broken pipe: ClientOSError and its kin
        return _os_failure(error)
    if isinstance(error, aiohttp.ClientPayloadError):
        text = str(error)  # aiohttp says how the connection ended in its message alone
        if "not completed" in text:
            reset = " (connection reset by peer)" if "ConnectionResetError" in text else ""
            return f"the connection closed before the answer was complete{reset}"
        return f"the answer's body could not be read ({text})"
    return f"{type(error).__name__}: {error}"


def _os_failure(error: OSError) -> str:
    """``connection refused (errno 111, ECONNREFUSED)``: the system's words, not the
    event loop's ("Connect call failed ...")."""
    number = error.errno
    if isinstance(number, int) and number in errno.errorcode:
        return f"{os.strerror(number).lower()} (errno {number}, {errno.errorcode[number]})"
    return str(error) or type(error).__name__


def _tls_reason(error: OSError) -> str:
    reason = getattr(error, "reason", None)
    if reason == "WRONG_VERSION_NUMBER":  # TLS spoken to a port that answers plain HTTP
        return f"{error}; does base_url say https:// for a plain-HTTP server?"
    return str(error)


def host_and_port(url: str) -> tuple[str, str]:
    """``base_url``'s ``host:port`` (the port its scheme implies if it names none), and the
    URL as it may be shown: no user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"https": 443, "http": 80}.get(parts.scheme)
    where = host if port is None else f"{host}:{port}"
    return where, f"{parts.scheme}://{where}{parts.path}"
