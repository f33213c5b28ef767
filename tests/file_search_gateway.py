"""A gateway with file search: the fake embeddings server, a model routed to it, and the
tests' helpers (files of each kind, a PDF made by hand, waiting for processing)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai import OpenAI

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_embeddings import KEY, FakeEmbeddings
from .fake_upstream import FakeUpstream
from .servers import serve


@contextmanager
def file_search_gateway(
    fake_upstream: tuple[FakeUpstream, str],
    embeddings: tuple[FakeEmbeddings, str],
    path: Path,
    providers: dict[str, Any] | None = None,
    models: dict[str, Any] | None = None,
    **overrides: Any,
) -> Iterator[Gateway]:
    """A gateway whose ``embed-small`` model is the fake embeddings server, with more
    ``providers`` and ``models`` beside the usual fakes'."""
    fake, url = fake_upstream
    embedder, embed_url = embeddings
    embedder.reset()
    made = gateway_config(url, path / "sessions.db", **overrides)
    raw = made.model_dump(exclude_unset=True)
    raw["providers"]["fake-embed"] = {
        "wire_api": "chat_completions",
        "base_url": f"{embed_url}/v1",
        "api_key": KEY,
    }
    raw["providers"].update(providers or {})
    raw["models"] = {**raw.get("models", {}), **(models or {})}
    raw["models"] = {
        **raw.get("models", {}),
        "embed-small": {"provider": "fake-embed", "upstream_model": "hash-256"},
    }
    raw["file_search"] = {
        "embeddings_model": "embed-small",
        "max_file_bytes": 64 * 1024,
        **raw.get("file_search", {}),
    }
    config = type(made).model_validate(raw)
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, fake)
        try:
            yield gateway
        finally:
            embedder.release.set()
            for client in gateway.clients:
                client.close()


def pdf_with(text: str) -> bytes:
    """A one-page PDF whose page shows ``text`` (in Helvetica), with a correct xref table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def processed(client: OpenAI, store_id: str, seconds: float = 20.0) -> dict[str, int]:
    """Wait until the store has no file in progress; its file counts."""
    deadline = time.monotonic() + seconds
    while True:
        store = client.vector_stores.retrieve(store_id)
        if store.file_counts.in_progress == 0 or time.monotonic() > deadline:
            return store.file_counts.model_dump()
        time.sleep(0.02)
