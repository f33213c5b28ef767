"""Where a client's MCP server may be: the address the gateway connects to is the one it
checked (a name that answers a public address and then loopback reaches nothing), and a
URL stays inside the ``mcp.allowed_servers`` entry it matched, however it is spelled.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import ssl
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gateway.upstream.transport.addresses import StaticResolver
from gateway.upstream.transport.pinned import PinnedTransport

from .conftest import Gateway
from .fake_upstream import FakeUpstream, Reply
from .mcp_gateway import call, dice_tool, error_of, mcp_gateway
from .mcp_server import McpServer, mcp_server
from .servers import raw_server

pytestmark = [pytest.mark.api]

PUBLIC = "93.184.215.14"


class RebindingResolver:
    """A name whose answer changes between lookups (a TTL of 0): a public address first,
    loopback on every later lookup."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lookups: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        with self._lock:
            self.lookups.append(host)
            return [PUBLIC] if len(self.lookups) == 1 else ["127.0.0.1"]


def rebound(server: McpServer) -> str:
    """``server``'s URL under a name only the test resolver knows."""
    parts = urlsplit(server.url)
    return parts._replace(netloc=f"mcp.rebind.test:{parts.port}").geturl()


def sse_events(answer: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in answer.text.splitlines()
        if line.startswith("data: ")
    ]


@pytest.mark.parametrize("sse", [False, True], ids=["streamable-http", "sse"])
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_a_name_that_rebinds_to_loopback_reaches_nothing(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, sse: bool, stream: bool
) -> None:
    resolver = RebindingResolver()
    with (
        mcp_server(sse=sse) as loopback,
        mcp_gateway(
            fake_upstream, tmp_path, loopback, allowed_servers=None, resolver=resolver
        ) as gateway,
    ):
        gateway.fake.script(call(), Reply(text="Six."))
        body = {
            "model": "chat-model",
            "input": "roll",
            "tools": [dice_tool(loopback, server_url=rebound(loopback))],
            "stream": stream,
        }
        answer = httpx.post(f"{gateway.url}/v1/responses", json=body, timeout=30)
        assert loopback.headers == [] and loopback.calls == []
        assert len(resolver.lookups) >= 2  # the name did rebind: loopback was on offer
        if stream:
            events = sse_events(answer)
            assert events[-1]["type"] == "response.failed"
            listed = [e for e in events if e["type"] == "response.output_item.done"]
            assert listed and "tools[0].server_url" in listed[0]["item"]["error"]
        else:
            assert answer.status_code == 424, answer.text
            assert "tools[0].server_url" in error_of(answer)["message"]
            assert "not a public address" in error_of(answer)["message"]
        assert gateway.fake.requests == []


@pytest.mark.anyio
async def test_the_pinned_transport_connects_to_the_address_it_checked(dice: McpServer) -> None:
    """The request goes to the address the resolver gave (and the check passed), under
    the name the client used: the server sees that name as its ``Host``."""
    port = urlsplit(dice.url).port
    resolver = StaticResolver({"pinned.test": ["127.0.0.1"]})
    transport = PinnedTransport(resolver, allowed=lambda address: address == "127.0.0.1")
    dice.headers.clear()
    async with httpx2.AsyncClient(transport=transport) as client:
        answer = await client.get(f"http://pinned.test:{port}/mcp")
    assert answer.request.url.host == "pinned.test"
    assert [headers["host"] for headers in dice.headers] == [f"pinned.test:{port}"]
    refusing = PinnedTransport(resolver)
    async with httpx2.AsyncClient(transport=refusing) as client:
        with pytest.raises(httpx2.ConnectError, match="not a public address"):
            await client.get(f"http://pinned.test:{port}/mcp")
    assert len(dice.headers) == 1


def _tls_for(name: str, folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context whose certificate names ``name`` alone, and a client context that
    trusts it."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    return server, ssl.create_default_context(cafile=str(cert_path))


async def _answers_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
    await writer.drain()


def test_over_tls_the_certificate_is_checked_against_the_name(tmp_path: Path) -> None:
    """Connected to the checked address, the gateway still verifies the certificate (and
    sends the server name) of the host the client named."""
    server_tls, client_tls = _tls_for("pinned.test", tmp_path)
    resolver = StaticResolver({"pinned.test": ["127.0.0.1"]})

    async def fetch(port: int) -> str:
        inner = httpx2.AsyncHTTPTransport(verify=client_tls, trust_env=False)
        transport = PinnedTransport(resolver, allowed=lambda a: a == "127.0.0.1", inner=inner)
        async with httpx2.AsyncClient(transport=transport) as client:
            return (await client.get(f"https://pinned.test:{port}/")).text

    with raw_server(_answers_ok, server_tls) as port:
        assert asyncio.run(fetch(port)) == "ok"


def test_a_listed_server_is_reached_as_before(mcp: Gateway, dice: McpServer) -> None:
    mcp.fake.script(call(), Reply(text="Six."))
    response = mcp.client().responses.create(
        model="chat-model", input="roll", tools=[dice_tool(dice)]
    )
    assert response.output[1].output == "rolled a 6"


# -- mcp.allowed_servers: a URL stays inside the entry it matched --------------------------

ESCAPING = [
    "{base}/mcp/../sse",
    "{base}/mcp/x/../../sse",
    "{base}/mcp/..",
    "{base}/mcp/%2e%2e/sse",
    "{base}/mcp/%2E%2E/sse",
    "{base}/mcp/.%2e/sse",
    "{base}/mcp/%2e./sse",
    "{base}/mcp/..%2fsse",
    "{base}/mcp/..%2Fsse",
    "{base}/mcp%2f..%2fsse",
    "{base}/mcp/..%5csse",
    "{base}/mcp\\..\\sse",
    "{base}/mcp/x%2fy",
    "{base}/mcpx",
    "{base}/MCP",
    "{base}/",
    "https://127.0.0.1:{port}/mcp",
    "http://localhost:{port}/mcp",
    "http://127.0.0.1:{other}/mcp",
    "http://127.0.0.1:{port}@192.0.2.1/mcp",
    "http://127.0.0.1:99999/mcp",
    "http://127.0.0.1:port/mcp",
]
INSIDE = [
    "{base}/mcp",
    "HTTP://127.0.0.1:{port}/mcp",
    "{base}/./mcp",
    "{base}/sse/../mcp",
    "{base}/mcp?session=1",
]


def _urls(table: list[str], dice: McpServer) -> list[str]:
    base = dice.url.removesuffix("/mcp")
    port = urlsplit(dice.url).port
    other = 1 if port != 1 else 2
    return [url.format(base=base, port=port, other=other) for url in table]


def test_a_url_that_leaves_its_allowed_prefix_is_a_400(mcp: Gateway, dice: McpServer) -> None:
    assert mcp.config.mcp.allowed_servers == [dice.url]
    for url in _urls(ESCAPING, dice):
        tools = [{"type": "function", "name": "f"}, dice_tool(dice, server_url=url)]
        answer = httpx.post(
            f"{mcp.url}/v1/responses", json={"model": "chat-model", "input": "hi", "tools": tools}
        )
        assert answer.status_code == 400, (url, answer.text)
        assert error_of(answer)["param"] == "tools[1].server_url", url
        assert error_of(answer)["type"] == "invalid_request_error"
    assert dice.headers == [] and mcp.fake.requests == []


def test_a_url_inside_its_allowed_prefix_still_works(mcp: Gateway, dice: McpServer) -> None:
    for url in _urls(INSIDE, dice):
        mcp.fake.script(call(), Reply(text="Six."))
        response = mcp.client().responses.create(
            model="chat-model", input="roll", tools=[dice_tool(dice, server_url=url)]
        )
        assert response.output[1].output == "rolled a 6", url
