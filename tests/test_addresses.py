"""Which addresses the gateway reaches for a client: public ones only, however spelled.

IPv6 has several ways of carrying an IPv4 address inside; each is judged by the IPv4
address it carries, so ``[::ffff:0:127.0.0.1]`` is loopback like ``127.0.0.1``.
"""

from __future__ import annotations

import pytest

from gateway.upstream.transport.addresses import (
    AddressRefused,
    StaticResolver,
    is_public,
    public_addresses,
)

pytestmark = [pytest.mark.anyio, pytest.mark.unit]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",  # shared address space (carrier-grade NAT)
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "192.0.2.1",  # documentation
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "::127.0.0.1",  # IPv4-compatible
        "::10.0.0.1",
        "::ffff:0:127.0.0.1",  # IPv4-translated
        "::ffff:0:169.254.169.254",
        "64:ff9b::127.0.0.1",  # NAT64, well-known prefix
        "64:ff9b::10.0.0.1",
        "64:ff9b:1::1",  # NAT64, local-use prefix
        "64:ff9b:1:7f00:1::",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
        "2001:db8::1",  # documentation
    ],
)
def test_what_is_not_public_is_refused(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "8.8.8.8",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",
        "2002:808:808::1",
    ],
)
def test_public_addresses_pass(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize(
    "host",
    ["::127.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b::127.0.0.1", "2002:7f00:1::"],
)
async def test_a_literal_ipv6_host_that_carries_loopback_is_refused(host: str) -> None:
    with pytest.raises(AddressRefused):
        await public_addresses(host, 80, StaticResolver({}))


async def test_one_private_answer_among_public_ones_refuses_the_host() -> None:
    resolver = StaticResolver({"mixed.test": ["93.184.215.14", "127.0.0.1"]})
    with pytest.raises(AddressRefused):
        await public_addresses("mixed.test", 443, resolver)
    resolver = StaticResolver({"public.test": ["93.184.215.14", "2606:4700:4700::1111"]})
    assert await public_addresses("public.test", 443, resolver) == [
        "93.184.215.14",
        "2606:4700:4700::1111",
    ]


async def test_a_host_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(AddressRefused, match="does not resolve"):
        await public_addresses("nowhere.test", 80, StaticResolver({}))
