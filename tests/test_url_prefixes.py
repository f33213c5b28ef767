"""URL prefixes matched by their parts: a URL stays inside the prefix it matched."""

from __future__ import annotations

import pytest

from gateway.url_prefixes import covered, url_parts

pytestmark = [pytest.mark.unit]

PREFIXES = ["http://localhost:47104/tools/", "https://mcp.example.com/api", "http://[::1]:8000"]


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:47104/tools/x",
        "http://localhost:47104/tools/",
        "http://LOCALHOST:47104/tools/a/../b",
        "HTTP://localhost:47104/./tools/x",
        "https://mcp.example.com/api",
        "https://mcp.example.com:443/api/v2?x=1",
        "https://user@mcp.example.com/api/",
        "http://[0:0::1]:8000/anything",
    ],
)
def test_urls_inside_a_prefix(url: str) -> None:
    assert covered(url_parts(url), PREFIXES)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:47104/tools/../mcp",
        "http://localhost:47104/tools/x/../../mcp",
        "http://localhost:47104/tools",
        "http://localhost:47104/toolsx",
        "http://localhost:47104/Tools/x",
        "http://localhost:47105/tools/x",
        "https://localhost:47104/tools/x",
        "http://localhost:47104@evil.example/tools/x",
        "https://mcp.example.com/apix",
        "https://mcp.example.com:8443/api",
        "http://mcp.example.com/api",
        "http://[::2]:8000/",
    ],
)
def test_urls_outside_every_prefix(url: str) -> None:
    assert not covered(url_parts(url), PREFIXES)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:47104/tools/%2e%2e/mcp",
        "http://localhost:47104/tools/%2E./mcp",
        "http://localhost:47104/tools/..%2fmcp",
        "http://localhost:47104/tools%2F..%2Fmcp",
        "http://localhost:47104/tools/..%5cmcp",
        "http://localhost:47104/tools\\..\\mcp",
        "ftp://localhost:47104/tools/",
        "http:///tools/",
        "http://localhost:65536/tools/",
    ],
)
def test_urls_that_cannot_be_compared_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        url_parts(url)


def test_the_url_fetched_is_the_url_matched() -> None:
    assert url_parts("http://localhost:47104/tools/a/../b?q=1").url == (
        "http://localhost:47104/tools/b?q=1"
    )
    assert url_parts("https://mcp.example.com").url == "https://mcp.example.com"
