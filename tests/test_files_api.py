"""The Files, Vector Stores and Embeddings APIs through the strict ``openai`` SDK, against
the fake embeddings server over real HTTP: uploads of each kind, limits, processing in the
background, search that ranks the relevant chunk first, and what deletes take along."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import openai
import pytest

from .conftest import Gateway
from .fake_embeddings import FakeEmbeddings, embed
from .fake_upstream import FakeUpstream
from .file_search_gateway import file_search_gateway, pdf_with, processed
from .servers import serve

pytestmark = [pytest.mark.api]

KINDS = {
    "notes.txt": b"The lighthouse keeper logs every passing ship at night.",
    "guide.md": b"# Baking\n\nKnead the sourdough bread dough for ten minutes.",
    "page.html": b"<html><head><style>x{}</style></head><body><p>Volcanoes erupt molten lava"
    b"</p><script>no()</script></body></html>",
    "data.json": json.dumps({"planet": "Jupiter has a great red storm"}).encode(),
    "code.py": b"def fibonacci_numbers(n):\n    return n  # recursion sequence\n",
    "paper.pdf": pdf_with("Penguins huddle together in Antarctic winters"),
}


@pytest.fixture(scope="module")
def embeddings() -> Iterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture
def gateway(
    fake_upstream: tuple[FakeUpstream, str],
    embeddings: tuple[FakeEmbeddings, str],
    tmp_path: Path,
) -> Iterator[Gateway]:
    with file_search_gateway(fake_upstream, embeddings, tmp_path) as made:
        yield made


def test_embeddings_are_routed_metered_and_encoded(
    gateway: Gateway, embeddings: tuple[FakeEmbeddings, str]
) -> None:
    client = gateway.client()
    # The SDK asks for base64 by default and decodes it after parsing: not strictly parsed.
    loose = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="k", max_retries=0)
    answer = loose.embeddings.create(model="embed-small", input=["red apples", "green pears"])
    loose.close()
    assert answer.model == "embed-small" and [d.index for d in answer.data] == [0, 1]
    assert answer.data[0].embedding == pytest.approx(embed("red apples"), abs=1e-6)
    assert answer.usage.prompt_tokens == 4
    floats = client.embeddings.create(model="embed-small", input="x", encoding_format="float")
    assert floats.data[0].embedding == pytest.approx(embed("x"), abs=1e-6)
    sent = embeddings[0].requests
    assert [r["model"] for r in sent] == ["hash-256", "hash-256"]
    assert {r["encoding_format"] for r in sent} == {"float"}  # base64 is made here
    with closing(sqlite3.connect(gateway.config.session.sqlite.path)) as conn:
        rows = conn.execute("SELECT model, input_tokens FROM unstored_turns").fetchall()
    assert rows == [("embed-small", 4), ("embed-small", 1)]
    with pytest.raises(openai.BadRequestError) as echo:  # the default provider, no embeddings
        client.embeddings.create(model="nope", input="x", encoding_format="float")
    assert echo.value.code == "model_not_supported"
    with pytest.raises(openai.BadRequestError) as refused:
        client.embeddings.create(model="embed-small", input="")
    assert refused.value.body["param"] == "input"  # type: ignore[index]


def test_files_are_kept_listed_read_and_deleted(gateway: Gateway) -> None:
    client = gateway.client()
    made = [client.files.create(file=(n, c), purpose="assistants") for n, c in KINDS.items()]
    assert made[0].filename == "notes.txt" and made[0].bytes == len(KINDS["notes.txt"])
    assert made[0].id.startswith("file-") and made[0].status == "processed"
    page = client.files.list(limit=2, order="asc")
    assert [f.id for f in page.data] == [made[0].id, made[1].id] and page.has_more
    assert [f.id for f in client.files.list(purpose="assistants")] == [f.id for f in reversed(made)]
    assert client.files.list(purpose="batch").data == []
    assert client.files.retrieve(made[5].id).filename == "paper.pdf"
    assert client.files.content(made[5].id).read() == KINDS["paper.pdf"]
    deleted = client.files.delete(made[0].id)
    assert deleted.deleted and deleted.id == made[0].id
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(made[0].id)
    empty = client.files.create(file=("empty.txt", b""), purpose="assistants")
    assert empty.bytes == 0


def test_uploads_past_the_limit_or_without_purpose_are_refused(gateway: Gateway) -> None:
    client = gateway.client()
    with pytest.raises(openai.APIStatusError) as large:
        client.files.create(file=("big.txt", b"x" * (64 * 1024 + 1)), purpose="assistants")
    assert large.value.status_code == 413 and large.value.body["param"] == "file"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError):
        client.files.create(file=("a.txt", b"a"), purpose="nonsense")  # type: ignore[arg-type]
    raw = httpx.post(f"{gateway.url}/v1/files", files={"file": ("a.txt", b"a")})
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "purpose"
    assert client.files.list().data == []  # nothing half-written


def test_every_kind_is_searchable_and_the_relevant_chunk_ranks_first(gateway: Gateway) -> None:
    client = gateway.client()
    ids = {n: client.files.create(file=(n, c), purpose="assistants").id for n, c in KINDS.items()}
    store = client.vector_stores.create(name="docs", file_ids=list(ids.values()))
    assert store.status in ("in_progress", "completed") and store.name == "docs"
    counts = processed(client, store.id)
    assert counts["completed"] == len(KINDS) and counts["failed"] == 0
    for name, query in [
        ("notes.txt", "ships and the lighthouse"),
        ("guide.md", "how long to knead sourdough"),
        ("page.html", "lava from volcanoes"),
        ("data.json", "Jupiter storm"),
        ("code.py", "fibonacci recursion"),
        ("paper.pdf", "penguins in Antarctic winter"),
    ]:
        found = client.vector_stores.search(store.id, query=query, max_num_results=3)
        assert found.data[0].filename == name, query
        assert found.data[0].file_id == ids[name] and 0 < found.data[0].score <= 1
    html = client.vector_stores.files.content(ids["page.html"], vector_store_id=store.id)
    assert [c.text for c in html] == ["Volcanoes erupt molten lava"]  # no script, no style
    again = client.vector_stores.retrieve(store.id)
    assert again.usage_bytes > 0 and again.status == "completed"


def test_unreadable_files_fail_alone(gateway: Gateway) -> None:
    client = gateway.client()
    good = client.files.create(file=("a.txt", b"alpha beta"), purpose="assistants")
    corrupt = client.files.create(file=("bad.pdf", b"%PDF-1.4 garbage"), purpose="assistants")
    empty = client.files.create(file=("empty.txt", b""), purpose="assistants")
    binary = client.files.create(file=("blob.bin", b"\x00\x01\x02"), purpose="assistants")
    store = client.vector_stores.create(name="mixed")
    batch = client.vector_stores.file_batches.create(
        store.id, file_ids=[good.id, corrupt.id, empty.id, binary.id]
    )
    assert batch.file_counts.total == 4
    counts = processed(client, store.id)
    assert counts == {"in_progress": 0, "completed": 1, "failed": 3, "cancelled": 0, "total": 4}
    bad = client.vector_stores.files.retrieve(corrupt.id, vector_store_id=store.id)
    assert bad.status == "failed" and bad.last_error is not None
    assert bad.last_error.code == "invalid_file" and "bad.pdf" in bad.last_error.message
    failed = client.vector_stores.files.list(store.id, filter="failed")
    assert {f.id for f in failed} == {corrupt.id, empty.id, binary.id}
    assert (
        client.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store.id).status
        == "completed"
    )
    assert [h.file_id for h in client.vector_stores.search(store.id, query="alpha")] == [good.id]


def test_filters_chunking_and_hybrid_ranking(gateway: Gateway) -> None:
    client = gateway.client()
    text = " ".join(f"word{n}" for n in range(400))
    one = client.files.create(file=("long.txt", text.encode()), purpose="assistants")
    two = client.files.create(file=("other.txt", b"word1 word2 cats"), purpose="assistants")
    store = client.vector_stores.create(name="f")
    attached = client.vector_stores.files.create(
        vector_store_id=store.id,
        file_id=one.id,
        attributes={"year": 2024, "lang": "en"},
        chunking_strategy={
            "type": "static",
            "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 50},
        },
    )
    assert attached.status == "in_progress" and attached.attributes == {"year": 2024, "lang": "en"}
    client.vector_stores.files.create(
        vector_store_id=store.id, file_id=two.id, attributes={"year": 2020}
    )
    processed(client, store.id)
    chunks = list(client.vector_stores.files.content(one.id, vector_store_id=store.id))
    assert len(chunks) > 4
    recent = client.vector_stores.search(
        store.id, query="word1 cats", filters={"type": "gte", "key": "year", "value": 2021}
    )
    assert {h.file_id for h in recent.data} == {one.id}
    both = client.vector_stores.search(
        store.id,
        query="cats",
        filters={
            "type": "or",
            "filters": [
                {"type": "eq", "key": "lang", "value": "en"},
                {"type": "lt", "key": "year", "value": 2021},
            ],
        },
        ranking_options={  # type: ignore[arg-type]  # the SDK's type lacks hybrid_search
            "hybrid_search": {"embedding_weight": 1, "text_weight": 1},
            "score_threshold": 0.1,
        },
    )
    assert both.data[0].file_id == two.id
    with pytest.raises(openai.BadRequestError) as bad:
        unknown = {"type": "like", "key": "a", "value": 1}
        client.vector_stores.search(store.id, query="x", filters=unknown)  # type: ignore[arg-type]
    assert bad.value.body["param"] == "filters.type"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError):
        client.vector_stores.files.create(
            vector_store_id=store.id,
            file_id=two.id,
            chunking_strategy={
                "type": "static",
                "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 90},
            },
        )


def test_stores_are_modified_listed_and_deleted_with_their_chunks(gateway: Gateway) -> None:
    client = gateway.client()
    made = client.files.create(file=("a.txt", b"zebra stripes"), purpose="assistants")
    store = client.vector_stores.create(
        name="s",
        file_ids=[made.id],
        expires_after={"anchor": "last_active_at", "days": 3},
        metadata={"k": "v"},
    )
    assert store.expires_at == (store.last_active_at or 0) + 3 * 86400
    processed(client, store.id)
    changed = client.vector_stores.update(store.id, name="renamed", metadata={"a": "b"})
    assert changed.name == "renamed" and changed.metadata == {"a": "b"}
    assert [s.id for s in client.vector_stores.list()] == [store.id]
    client.vector_stores.files.delete(made.id, vector_store_id=store.id)
    assert client.vector_stores.search(store.id, query="zebra").data == []
    assert client.vector_stores.delete(store.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.vector_stores.retrieve(store.id)
    with closing(sqlite3.connect(gateway.config.session.sqlite.path)) as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM chunks_fts").fetchone() == (0,)


def test_a_file_deleted_while_processed_leaves_nothing(
    gateway: Gateway, embeddings: tuple[FakeEmbeddings, str]
) -> None:
    client = gateway.client()
    made = client.files.create(file=("a.txt", b"slow file"), purpose="assistants")
    embeddings[0].hold = True
    store = client.vector_stores.create(name="s", file_ids=[made.id])
    deadline = time.monotonic() + 10
    while not embeddings[0].requests and time.monotonic() < deadline:
        time.sleep(0.01)
    client.files.delete(made.id)
    embeddings[0].release.set()
    counts = processed(client, store.id)
    assert counts["total"] == 0
    with closing(sqlite3.connect(gateway.config.session.sqlite.path)) as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone() == (0,)


def test_two_instances_on_postgres_share_files_and_vector_stores(
    fake_upstream: tuple[FakeUpstream, str],
    embeddings: tuple[FakeEmbeddings, str],
    tmp_path: Path,
    postgres_dsn: str,
) -> None:
    session = {"backend": "postgres", "postgres": {"dsn": postgres_dsn}}
    with (
        file_search_gateway(fake_upstream, embeddings, tmp_path, session=session) as one,
        file_search_gateway(fake_upstream, embeddings, tmp_path, session=session) as two,
    ):
        first, second = one.client(), two.client()
        made = first.files.create(
            file=("a.md", b"Otters hold hands while asleep."), purpose="assistants"
        )
        store = first.vector_stores.create(name="shared", file_ids=[made.id])
        assert processed(second, store.id)["completed"] == 1
        found = second.vector_stores.search(store.id, query="sleeping otters")
        assert found.data[0].file_id == made.id
        weights = {"hybrid_search": {"embedding_weight": 1, "text_weight": 1}}
        hybrid = second.vector_stores.search(
            store.id,
            query="otters",
            ranking_options=weights,  # type: ignore[arg-type]  # the SDK's type lacks it
        )
        assert hybrid.data[0].file_id == made.id
        assert second.files.content(made.id).read() == b"Otters hold hands while asleep."
        second.files.delete(made.id)
        assert first.vector_stores.retrieve(store.id).file_counts.total == 0


def test_a_query_rewrite_is_refused_not_ignored(gateway: Gateway) -> None:
    client = gateway.client()
    store = client.vector_stores.create(name="r")
    with pytest.raises(openai.BadRequestError) as refused:
        client.vector_stores.search(vector_store_id=store.id, query="cats", rewrite_query=True)
    assert refused.value.status_code == 400
    assert refused.value.body["param"] == "rewrite_query"  # type: ignore[index]


def test_a_file_named_twice_is_attached_and_processed_once(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """In a store's ``file_ids`` or a batch, a file named twice is one attachment (the last
    mention's attributes), processed once: no error logged, its chunks kept once."""
    client = gateway.client()
    made = client.files.create(file=("a.txt", b"twice named walrus"), purpose="assistants")
    store = client.vector_stores.create(name="twice", file_ids=[made.id, made.id])
    assert store.file_counts.total == 1
    batch = client.vector_stores.file_batches.create(
        vector_store_id=store.id,
        files=[
            {"file_id": made.id, "attributes": {"n": 1}},
            {"file_id": made.id, "attributes": {"n": 2}},
        ],
    )
    assert batch.file_counts.total == 1
    counts = processed(client, store.id)
    assert counts["completed"] == 1 and counts["total"] == 1
    [attached] = client.vector_stores.files.list(vector_store_id=store.id).data
    assert attached.attributes == {"n": 2} and attached.status == "completed"
    assert len(client.vector_stores.search(store.id, query="walrus").data) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    with closing(sqlite3.connect(gateway.config.session.sqlite.path)) as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone() == (1,)


def test_a_filename_holding_a_nul_character_is_refused_naming_file(gateway: Gateway) -> None:
    """As a NUL in a JSON body is, whichever backend (PostgreSQL cannot keep one)."""
    form = (
        b'--b\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants\r\n'
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a\x00b.txt"\r\n\r\n'
        b"hello\r\n--b--\r\n"
    )
    headers = {"content-type": "multipart/form-data; boundary=b"}
    refused = httpx.post(f"{gateway.url}/v1/files", content=form, headers=headers)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["param"] == "file"
    assert refused.json()["error"]["code"] == "invalid_value"
    assert gateway.client().files.list().data == []
