"""URLs and URL prefixes compared by their parts, not as strings.

A URL is taken apart: its scheme and host lower-cased (an IP address in its canonical
spelling), the scheme's default port filled in, ``.`` and ``..`` path segments resolved
as RFC 3986 resolves them. A path holding an encoded ``.``, ``/`` or ``\\`` (``%2e``,
``%2f``, ``%5c``) or a backslash is refused: a server may decode it into a segment that
climbs out of the prefix. A prefix covers a URL of the same scheme, host and port whose
path is the prefix's path or lies below it, segment by segment (``/tools`` covers
``/tools`` and ``/tools/x``, not ``/toolsx``); a prefix with a query covers that query
alone. The user part of a URL plays no part.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_ENCODED_SEPARATOR = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


@dataclass(frozen=True)
class UrlParts:
    """A URL as it is compared: see the module."""

    scheme: str
    host: str
    port: int
    path: str
    query: str
    split: SplitResult  # as given, its path replaced by the resolved one

    @property
    def url(self) -> str:
        """The URL with its path resolved: what is compared is what is fetched."""
        return self.split.geturl()


def _resolved(path: str) -> str:
    """``path`` without ``.`` and ``..`` segments (RFC 3986, section 5.2.4)."""
    segments = path.split("/")
    kept: list[str] = []
    for at, segment in enumerate(segments):
        last = at == len(segments) - 1
        if segment in (".", ".."):
            if segment == ".." and len(kept) > 1:
                kept.pop()
            if last:
                kept.append("")  # "/a/.." is the folder "/"
        else:
            kept.append(segment)
    return "/".join(kept) or "/"


def _host(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def url_parts(url: str) -> UrlParts:
    """``url`` taken apart; :class:`ValueError` saying why for one that cannot be compared."""
    split = urlsplit(url)
    scheme = split.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError("it does not start with http:// or https://")
    if not split.hostname:
        raise ValueError("it names no host")
    try:
        port = split.port
    except ValueError:
        raise ValueError("its port is not a number from 0 to 65535") from None
    if "\\" in split.path or _ENCODED_SEPARATOR.search(split.path):
        raise ValueError("its path holds an encoded '.', '/' or '\\', or a backslash")
    path = _resolved(split.path)
    return UrlParts(
        scheme,
        _host(split.hostname),
        port if port is not None else DEFAULT_PORTS[scheme],
        path,
        split.query,
        split._replace(path=path if split.path else ""),
    )


def covers(prefix: UrlParts, url: UrlParts) -> bool:
    """Whether ``prefix`` covers ``url`` (see the module)."""
    if (prefix.scheme, prefix.host, prefix.port) != (url.scheme, url.host, url.port):
        return False
    if prefix.query and prefix.query != url.query:
        return False
    base = prefix.path
    if url.path == base:
        return True
    return url.path.startswith(base if base.endswith("/") else base + "/")


def covered(url: UrlParts, prefixes: Sequence[str]) -> bool:
    """Whether one of ``prefixes`` (URLs that :func:`url_parts` takes) covers ``url``."""
    return any(covers(url_parts(prefix), url) for prefix in prefixes)
