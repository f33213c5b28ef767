"""Property-based fuzzing of the Files, Vector Stores and Embeddings APIs on each backend:
no 5xx, no traceback, no error logged, every refusal OpenAI's error shape with a 4xx, a
refused write leaves nothing behind, and the gateway keeps serving.

    GATEWAY_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/test_fuzz_files.py   # a longer run
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bench.storage import throwaway_schema

from .adapter_targets import postgres_base
from .conftest import ErrorLog, Gateway
from .fake_embeddings import FakeEmbeddings
from .fake_upstream import FakeUpstream
from .file_search_gateway import file_search_gateway, processed
from .fuzz_bodies import encode
from .fuzz_file_bodies import (
    ATTACH_BODIES,
    BATCH_BODIES,
    EMBEDDING_BODIES,
    FILE_QUERIES,
    IDS,
    RAW_FORMS,
    SEARCH_BODIES,
    SEARCHED_TEXT,
    SEEDED_FILE,
    SEEDED_STORE,
    STORE_BODIES,
    VECTOR_STORE_QUERIES,
    upload_forms,
)
from .servers import serve
from .test_fuzz import EXAMPLES, FUZZ, JSON, check, sendable

# A longer run is given time in proportion (pytest-timeout's default is for the default run).
pytestmark = [pytest.mark.api, pytest.mark.timeout(max(120, EXAMPLES))]


@dataclass(repr=False)
class Seeded:
    """A gateway holding one processed file in one vector store."""

    http: httpx.Client
    gateway: Gateway
    file_id: str
    store_id: str

    def named(self, value: Any) -> Any:
        """``value`` with the seeded ids in place of their placeholders, anywhere in it."""
        if value == SEEDED_FILE:
            return self.file_id
        if value == SEEDED_STORE:
            return self.store_id
        if isinstance(value, list):
            return [self.named(v) for v in value]
        if isinstance(value, dict):
            return {k: self.named(v) for k, v in value.items()}
        return value

    def segment(self, value: str) -> str:
        """``value`` as one URL path segment (a seeded id as itself)."""
        return quote(sendable(self.named(value)), safe="") or "x"

    def __repr__(self) -> str:
        return f"Seeded(file_id={self.file_id!r}, store_id={self.store_id!r})"

    def ids(self, path: str) -> list[str]:
        """The ids of the list at ``path``, all of them."""
        listed = check(self.http.get(path, params={"limit": 100}), NO_ERRORS)
        assert listed is not None and not listed["has_more"]
        return [one["id"] for one in listed["data"]]


NO_ERRORS = ErrorLog()  # for reads that log nothing; ``errors`` watches the gateway's log


@pytest.fixture(scope="module")
def embeddings() -> Iterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    with serve(fake.app) as url:
        yield fake, url


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres"])
def seeded(
    request: pytest.FixtureRequest,
    fake_upstream: tuple[FakeUpstream, str],
    embeddings: tuple[FakeEmbeddings, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Seeded]:
    """A file-search gateway on each backend, with ``notes.txt`` processed in a store."""
    folder: Path = tmp_path_factory.mktemp("fuzz-files")
    session: dict[str, Any] = {"backend": request.param, "sqlite": {"path": str(folder / "s.db")}}
    with ExitStack() as stack:
        if request.param == "postgres":
            session["postgres"] = {"dsn": stack.enter_context(throwaway_schema(postgres_base()))}
        gateway = stack.enter_context(
            file_search_gateway(fake_upstream, embeddings, folder, session=session)
        )
        http = stack.enter_context(httpx.Client(base_url=gateway.url, timeout=30))
        client = gateway.client()
        made = client.files.create(file=("notes.txt", SEARCHED_TEXT), purpose="assistants")
        store = client.vector_stores.create(name="seeded", file_ids=[made.id])
        assert processed(client, store.id)["completed"] == 1
        yield Seeded(http, gateway, made.id, store.id)


def refused_or_none(response: httpx.Response, errors: ErrorLog) -> Any:
    """``check``, and a refusal is a 4xx (a path no route takes may be redirected)."""
    body = check(response, errors)
    assert response.status_code in (200, 307) or 400 <= response.status_code < 500, response.text
    return body


def still_serving(seeded: Seeded, errors: ErrorLog) -> None:
    """The gateway answers a plain request, and the seeded file is still there."""
    answer = check(seeded.http.get(f"/v1/files/{seeded.file_id}"), errors)
    assert answer["id"] == seeded.file_id


# Starlette's parser leaves the spooled file of a form's unterminated last part to the
# garbage collector (which closes it at the end of the request), with a ResourceWarning.
@pytest.mark.filterwarnings("ignore:Unclosed file <tempfile.SpooledTemporaryFile:ResourceWarning")
@FUZZ
@example(form=({"purpose": "assistants"}, [("file", ("\x00", b"a", "text/plain"))]), raw=None)
@example(form=({"purpose": "assistants"}, [("file", ("\ud800.txt", b"a", ""))]), raw=None)
@example(form=({"purpose": "\x00"}, [("file", ("a", b"a", "text/plain"))]), raw=None)
@example(form=({}, []), raw=("multipart/form-data; boundary=b", b"--b--\r\n"))
@given(form=upload_forms(), raw=st.none() | RAW_FORMS)
def test_file_uploads(
    seeded: Seeded,
    errors: ErrorLog,
    form: tuple[dict[str, Any], list[tuple[str, Any]]],
    raw: tuple[str, bytes] | None,
) -> None:
    """An upload is kept whole (its bytes read back as sent) or refused leaving no file."""
    before = seeded.ids("/v1/files")
    data, parts = form
    if raw is not None:
        content_type, content = raw
        response = seeded.http.post(
            "/v1/files", content=content, headers={"content-type": content_type}
        )
    else:
        data = {k: [sendable(v) for v in vs] if isinstance(vs, list) else sendable(vs)
                for k, vs in data.items()}  # fmt: skip
        files = [(f, (sendable(n), c, t or None)) for f, (n, c, t) in parts]
        response = seeded.http.post("/v1/files", data=data, files=files)
    answer = refused_or_none(response, errors)
    if response.status_code != 200:
        assert seeded.ids("/v1/files") == before  # nothing half-written
        return
    file_id = answer["id"]
    kept = check(seeded.http.get(f"/v1/files/{file_id}"), errors)
    assert kept == answer
    read = seeded.http.get(f"/v1/files/{file_id}/content")
    assert read.status_code == 200 and len(read.content) == answer["bytes"]
    if raw is None:
        assert read.content in [c for f, (_, c, _) in parts if f == "file"]
    assert check(seeded.http.delete(f"/v1/files/{file_id}"), errors)["deleted"] is True
    assert seeded.ids("/v1/files") == before
    still_serving(seeded, errors)


@FUZZ
@given(query=FILE_QUERIES, ident=IDS)
def test_file_lists_and_lookups(
    seeded: Seeded, errors: ErrorLog, query: dict[str, str], ident: str
) -> None:
    params = {name: sendable(seeded.named(value)) for name, value in query.items()}
    listed = refused_or_none(seeded.http.get("/v1/files", params=params), errors)
    if listed is not None and "data" in listed:
        assert all(one["object"] == "file" for one in listed["data"])
    segment = seeded.segment(ident)
    for path in (f"/v1/files/{segment}", f"/v1/files/{segment}/content"):
        answer = seeded.http.get(path)
        assert answer.status_code < 500 and answer.status_code != 201
        if answer.status_code >= 400:
            refused_or_none(answer, errors)
    if segment != seeded.file_id:  # the seeded file is for the other tests
        refused_or_none(seeded.http.delete(f"/v1/files/{segment}"), errors)
    still_serving(seeded, errors)


@FUZZ
@example(body={"expires_after": None}, update={"expires_after": None}, query={})
@example(body={"metadata": {"\x00": "\x00"}}, update={"name": "\x00"}, query={})
@example(body={"file_ids": ["file-x"]}, update={}, query={})
@given(body=STORE_BODIES, update=STORE_BODIES, query=VECTOR_STORE_QUERIES)
def test_vector_stores(
    seeded: Seeded, errors: ErrorLog, body: Any, update: Any, query: dict[str, str]
) -> None:
    """A store is created whole or not at all; modified, listed and deleted alike."""
    before = seeded.ids("/v1/vector_stores")
    created = seeded.http.post(
        "/v1/vector_stores", content=encode(seeded.named(body)), headers=JSON
    )
    made = refused_or_none(created, errors)
    params = {name: sendable(seeded.named(value)) for name, value in query.items()}
    refused_or_none(seeded.http.get("/v1/vector_stores", params=params), errors)
    if created.status_code != 200:
        assert seeded.ids("/v1/vector_stores") == before
        return
    path = f"/v1/vector_stores/{made['id']}"
    changed = seeded.http.post(path, content=encode(seeded.named(update)), headers=JSON)
    refused_or_none(changed, errors)
    kept = check(seeded.http.get(path), errors)
    if changed.status_code == 200:
        assert kept["name"] == changed.json()["name"]
    else:
        assert kept["name"] == made["name"] and kept["metadata"] == made["metadata"]
    assert check(seeded.http.delete(path), errors)["deleted"] is True
    assert seeded.http.get(path).status_code == 404
    assert seeded.ids("/v1/vector_stores") == before
    still_serving(seeded, errors)


@FUZZ
@example(attach={"file_id": SEEDED_FILE, "attributes": {"k": 2**70}}, batch={}, query={},
         ident="x")  # fmt: skip
@example(attach={"file_id": SEEDED_FILE, "attributes": {"k": math.inf}}, batch={}, query={},
         ident="x")  # fmt: skip
@example(attach={"file_id": SEEDED_FILE, "attributes": {"\x00": "\x00"}}, batch={}, query={},
         ident="x")  # fmt: skip
@example(attach={"file_id": SEEDED_FILE}, batch={"file_ids": [SEEDED_FILE, SEEDED_FILE]},
         query={}, ident="x")  # fmt: skip
@given(attach=ATTACH_BODIES, batch=BATCH_BODIES, query=VECTOR_STORE_QUERIES, ident=IDS)
def test_vector_store_files_and_batches(
    seeded: Seeded, errors: ErrorLog, attach: Any, batch: Any, query: dict[str, str], ident: str
) -> None:
    """Attachments and batches on a store of their own: each whole or refused leaving the
    store's files as they were; lookups of any id a 200 or a 4xx."""
    store = check(seeded.http.post("/v1/vector_stores", json={"name": "scratch"}), errors)
    files = f"/v1/vector_stores/{store['id']}/files"
    attached = seeded.http.post(files, content=encode(seeded.named(attach)), headers=JSON)
    refused_or_none(attached, errors)
    before = seeded.ids(files)
    assert len(before) == (1 if attached.status_code == 200 else 0)
    batches = f"/v1/vector_stores/{store['id']}/file_batches"
    made = seeded.http.post(batches, content=encode(seeded.named(batch)), headers=JSON)
    answer = refused_or_none(made, errors)
    if made.status_code != 200:
        assert seeded.ids(files) == before
    else:
        kept = check(seeded.http.get(f"{batches}/{answer['id']}"), errors)
        assert kept["id"] == answer["id"]
        refused_or_none(seeded.http.get(f"{batches}/{answer['id']}/files"), errors)
    params = {name: sendable(seeded.named(value)) for name, value in query.items()}
    refused_or_none(seeded.http.get(files, params=params), errors)
    segment = seeded.segment(ident)
    for path in (
        f"{files}/{segment}",
        f"{files}/{segment}/content",
        f"{batches}/{segment}",
        f"{batches}/{segment}/files",
        f"/v1/vector_stores/{segment}/files",
        f"/v1/vector_stores/{segment}",
    ):
        refused_or_none(seeded.http.get(path, params=params), errors)
    refused_or_none(seeded.http.delete(f"{files}/{segment}"), errors)
    assert check(seeded.http.delete(f"/v1/vector_stores/{store['id']}"), errors)["deleted"]
    still_serving(seeded, errors)


@FUZZ
@example(body={"query": "lighthouse", "ranking_options": {"hybrid_search": {
    "embedding_weight": math.inf, "text_weight": 1}}}, ident=SEEDED_STORE)  # fmt: skip
@example(body={"query": "lighthouse", "ranking_options": {"hybrid_search": {
    "embedding_weight": 1e308, "text_weight": 1e308}}}, ident=SEEDED_STORE)  # fmt: skip
@example(body={"query": "lighthouse", "filters": {"type": "gt", "key": "k", "value": 2**70}},
         ident=SEEDED_STORE)  # fmt: skip
@example(body={"query": "lighthouse", "filters": {"type": "eq", "key": "k", "value": math.nan}},
         ident=SEEDED_STORE)  # fmt: skip
@given(body=SEARCH_BODIES, ident=IDS)
def test_vector_store_search(seeded: Seeded, errors: ErrorLog, body: Any, ident: str) -> None:
    """A search answers at most ``max_num_results`` hits, each scored from 0 to 1."""
    path = f"/v1/vector_stores/{seeded.segment(ident)}/search"
    response = seeded.http.post(path, content=encode(seeded.named(body)), headers=JSON)
    answer = refused_or_none(response, errors)
    if response.status_code == 200:
        most = body.get("max_num_results") or 10
        assert len(answer["data"]) <= most
        for hit in answer["data"]:
            score = hit["score"]
            assert isinstance(score, int | float) and 0 <= score <= 1, hit
    still_serving(seeded, errors)


@FUZZ
@example(body={"model": "embed-small", "input": [[2**70]]})
@example(body={"model": "embed-small", "input": "a", "dimensions": 2**40})
@example(body={"model": "embed-small", "input": [-1]})
@given(body=EMBEDDING_BODIES)
def test_embeddings(
    seeded: Seeded, embeddings: tuple[FakeEmbeddings, str], errors: ErrorLog, body: Any
) -> None:
    """Embeddings come back one per input, in the encoding asked for; or a 4xx."""
    response = seeded.http.post("/v1/embeddings", content=encode(body), headers=JSON)
    answer = refused_or_none(response, errors)
    if response.status_code != 200:
        return
    texts = body["input"]
    count = 1 if isinstance(texts, str) or isinstance(texts[0], int) else len(texts)
    assert [d["index"] for d in answer["data"]] == list(range(count))
    for one in answer["data"]:
        if body.get("encoding_format") == "base64":
            vector = base64.b64decode(one["embedding"], validate=True)
            assert len(vector) % 4 == 0
        else:
            assert all(isinstance(x, float) for x in one["embedding"])
    still_serving(seeded, errors)
