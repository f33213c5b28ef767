"""Which addresses the gateway may reach on a client's behalf, and who resolves names.

An address is public when it is globally routable and not multicast. IPv6 addresses that
carry an IPv4 address are judged by the IPv4 address they carry: IPv4-mapped
(``::ffff:0:0/96``), IPv4-compatible (``::/96``), IPv4-translated (``::ffff:0:0:0/96``) and
NAT64 (``64:ff9b::/96``); 6to4 (``2002::/16``) and Teredo (``2001::/32``, its client
address) must be public both as IPv6 and in the IPv4 address they carry; NAT64's
local-use prefix (``64:ff9b:1::/48``) is never public. A host is public when every
address it resolves to is: one private answer among public ones refuses it.

A :class:`Resolver` answers a name with addresses; :class:`SystemResolver` asks the
operating system. The gateway is given one (``create_app(resolver=...)``), so tests and
embedders can put another in its place.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# Address ranges whose last 32 bits are an IPv4 address (IPv4-mapped is the stdlib's).
_CARRY_LOW_IPV4 = (
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64, well-known prefix
)
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # where the IPv4 sits varies


class Resolver(Protocol):
    """Answers a host name with the addresses (as text) a client could connect to."""

    async def resolve(self, host: str, port: int) -> list[str]:
        """The host's addresses; :class:`OSError` when it does not resolve."""
        ...


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``)."""

    async def resolve(self, host: str, port: int) -> list[str]:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return [str(info[4][0]) for info in found]


@dataclass(frozen=True)
class StaticResolver:
    """Fixed answers, name by name; a name it does not hold does not resolve."""

    answers: Mapping[str, Sequence[str]] = field(default_factory=dict)

    async def resolve(self, host: str, port: int) -> list[str]:
        if host not in self.answers:
            raise OSError(f"{host!r} does not resolve")
        return list(self.answers[host])


class AddressRefused(Exception):
    """A host the gateway will not reach for a client; ``reason`` says why, in words
    that finish "not allowed: ..."."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host!r} is not allowed: {reason}")
        self.host = host
        self.reason = reason


def _public_ipv4(ip: ipaddress.IPv4Address) -> bool:
    return ip.is_global and not ip.is_multicast


def is_public(address: str) -> bool:
    """Whether ``address`` (IPv4 or IPv6, a zone allowed) may be reached for a client."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return _public_ipv4(ip)
    if ip.ipv4_mapped is not None:
        return _public_ipv4(ip.ipv4_mapped)
    if any(ip in network for network in _CARRY_LOW_IPV4):
        return _public_ipv4(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _NAT64_LOCAL or not ip.is_global or ip.is_multicast:
        return False
    if ip.sixtofour is not None and not _public_ipv4(ip.sixtofour):
        return False
    return ip.teredo is None or _public_ipv4(ip.teredo[1])


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]").split("%")[0]))
    except ValueError:
        return None


async def public_addresses(
    host: str, port: int, resolver: Resolver, allowed: Callable[[str], bool] = is_public
) -> list[str]:
    """The addresses of ``host``, every one ``allowed`` (public, by default);
    :class:`AddressRefused` when one is not, or the host does not resolve. An address as
    the host is its own answer."""
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolver.resolve(host, port)
        except OSError:
            raise AddressRefused(host, f"its host {host!r} does not resolve") from None
    if not addresses:
        raise AddressRefused(host, f"its host {host!r} does not resolve")
    if not all(allowed(address) for address in addresses):
        raise AddressRefused(host, "it is not a public address")
    return addresses
