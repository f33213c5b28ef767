"""LangGraph store semantic search on the gateway's store: LangGraph's own vector search
tests (from ``langgraph-checkpoint-postgres``'s ``test_store.py``) and the same searches
side by side with LangGraph's ``InMemoryStore``, in process on every backend and through a
gateway process; then the gateway's own embeddings model named as ``embed``.

The embeddings are :mod:`tests.fake_embeddings`' hashed bags of words and trigrams, whose
vectors carry meaning: a text sharing a query's words really is nearer it.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, IndexConfig, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore

from session import SQLiteStore
from session.adapters.langgraph import GatewayStore
from session.agent_store import StoreError

from .adapter_targets import Target
from .fake_embeddings import DIMENSIONS, FakeEmbeddings, embed
from .fake_upstream import FakeUpstream
from .file_search_gateway import file_search_gateway
from .servers import serve

pytestmark = [pytest.mark.anyio, pytest.mark.contract]


def embed_texts(texts: Sequence[str]) -> list[list[float]]:
    return [embed(text) for text in texts]


class RecordingEmbeddings(Embeddings):
    """The fake model as LangChain ``Embeddings``, recording how each text was embedded."""

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return embed_texts(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return embed(text)


def index(fields: list[str] | None = None, embedder: Any = embed_texts) -> IndexConfig:
    config = IndexConfig(dims=DIMENSIONS, embed=embedder)
    if fields is not None:
        config["fields"] = fields
    return config


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def keys(results: list[SearchItem]) -> list[str]:
    return [result.key for result in results]


# -- LangGraph's own vector search tests, on the adapter ----------------------------------


async def test_vector_insert_with_auto_embedding(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]
    for key, value in docs:
        await store.aput(("test",), key, value)
    results = await store.asearch(("test",), query="long text")
    assert {"doc2", "doc3"} <= set(keys(results))
    assert all(result.score is not None and 0 < result.score <= 1 for result in results)


async def test_vector_update_with_embedding(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    await store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
    await store.aput(("test",), "doc2", {"text": "something about dogs"})
    await store.aput(("test",), "doc3", {"text": "text about birds"})
    initial = await store.asearch(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None

    await store.aput(("test",), "doc1", {"text": "new text about dogs"})
    after = await store.asearch(("test",), query="Zany Xerxes")
    after_score = next(r.score for r in after if r.key == "doc1")
    assert after_score is not None and after_score < initial_score
    renewed = await store.asearch(("test",), query="new text about dogs")
    assert renewed[0].key == "doc1" and renewed[0].score > after_score  # type: ignore[operator]

    await store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = await store.asearch(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in keys(top)
    everything = await store.asearch(("test",), query="new text about dogs")
    assert (everything[-1].key, everything[-1].score) == ("doc4", None)


async def test_vector_search_with_filters(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        await store.aput(("test",), key, value)

    results = await store.asearch(("test",), query="apple", filter={"color": "red"})
    assert keys(results) == ["doc1", "doc2"]
    results = await store.asearch(("test",), query="car", filter={"color": "red"})
    assert keys(results) == ["doc2", "doc1"]
    results = await store.asearch(("test",), query="bluish", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    results = await store.asearch(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert keys(results) == ["doc3"]


async def test_vector_search_pagination(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    for i in range(5):
        await store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = await store.asearch(("test",), query="test", limit=2)
    page2 = await store.asearch(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not set(keys(page1)) & set(keys(page2))
    everything = await store.asearch(("test",), query="test", limit=10)
    assert len(everything) == 5
    assert keys(everything)[:4] == keys(page1) + keys(page2)
    scores = [result.score for result in everything]
    assert all(score is not None for score in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


async def test_vector_search_edge_cases(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    await store.aput(("test",), "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        results = await store.asearch(("test",), query=query)
        assert keys(results) == ["doc1"]
        assert (results[0].score is None) == (not query)


async def test_embed_with_path(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index(["key0", "key1", "key3"]))
    # doc1 has 2 vectors (key0 is missing: no error), doc2 has 3.
    await store.aput(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
    await store.aput(("test",), "doc2", doc2)

    results = await store.asearch(("test",), query="xxx")  # doc1.key1 and doc2.key3
    assert len(results) == 2 and results[0].key != results[1].key
    ascore, bscore = results[0].score, results[1].score
    assert ascore == pytest.approx(bscore, abs=1e-3)
    for query, best in (("uuu", "doc2"), ("zzz", "doc1")):
        results = await store.asearch(("test",), query=query)
        assert keys(results)[0] == best and len(results) == 2
        assert results[0].score > results[1].score  # type: ignore[operator]
        assert results[0].score == pytest.approx(ascore, abs=1e-3)
    # key2 is not indexed: both score below the indexed fields' best.
    results = await store.asearch(("test",), query="www")
    assert len(results) == 2
    assert all(r.score is not None and r.score < ascore for r in results)  # type: ignore[operator]


async def test_embed_with_path_operation_config(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index(["key17"]))
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    await store.aput(("test",), "doc3", doc3, index=["key0", "key1"])
    await store.aput(("test",), "doc4", doc4, index=["key1", "key3"])

    for query, best in (("aaa", "doc3"), ("ggg", "doc4")):
        results = await store.asearch(("test",), query=query)
        assert keys(results)[0] == best and len(set(keys(results))) == 2
        assert results[0].score > results[1].score  # type: ignore[operator]
    results = await store.asearch(("test",), query="bbb")
    assert len(set(keys(results))) == 2
    assert results[0].score == pytest.approx(results[1].score, abs=1e-3)
    results = await store.asearch(("test",), query="ccc")
    assert len(results) == 2 and all(r.score < 0.9 for r in results)  # type: ignore[operator]

    await store.aput(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = await store.asearch(("test",))
    assert len(results) == 3 and all(r.score is None for r in results)
    assert "doc5" in keys(results)
    # Unlike PostgresStore, items without vectors follow the scored ones.
    results = await store.asearch(("test",), query="hhh")
    assert keys(results)[2:] == ["doc5"] and results[2].score is None


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
async def test_scores(target: Target, query: str) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index(["key0"]))
    await store.aput(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    results = await store.asearch((), query=query)
    assert len(results) == 1
    assert results[0].score == pytest.approx(cosine(embed(query), embed("aaa")), abs=1e-3)


async def test_non_ascii(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=index())
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for n, text in enumerate(texts, 1):
        await store.aput(("user_123", "memories"), str(n), {"text": text})
    for n, text in enumerate(texts, 1):
        results = await store.asearch(("user_123", "memories"), query=text)
        assert results[0].key == str(n)


# -- side by side with InMemoryStore, and what LangGraph leaves to the store ---------------


async def test_vector_search_matches_langgraphs_in_memory_store(target: Target) -> None:
    config = index(["text", "tags[*]", "about.summary"])
    ours: BaseStore = target.adapter(GatewayStore, index=config)
    reference = InMemoryStore(index=config)
    puts: list[tuple[tuple[str, ...], str, dict[str, Any], Any]] = [
        (("users", "u1"), "m1", {"text": "likes green tea", "tags": ["drinks", "tea"]}, None),
        (("users", "u1"), "m2", {"text": "lives in Oslo", "about": {"summary": "city"}}, None),
        (("users", "u2"), "m1", {"text": "likes black coffee", "kind": "drink"}, None),
        (("users", "u2"), "m2", {"text": "plays chess on Sundays"}, ["text"]),
        (("users", "u3"), "m1", {"text": "likes tea and coffee"}, False),
        (("teams", "t1"), "k", {"text": "a team of tea drinkers"}, None),
    ]
    for store in (ours, reference):
        for namespace, key, value, indexed in puts:
            await store.aput(namespace, key, value, index=indexed)
    searches: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (("users",), {"query": "tea"}),
        (("users",), {"query": "coffee drinks", "limit": 2}),
        (("users",), {"query": "coffee drinks", "limit": 3, "offset": 2}),
        ((), {"query": "tea drinkers"}),
        (("users", "u1"), {"query": "city of Oslo"}),
        (("users",), {"query": "chess", "filter": {"kind": "drink"}}),
        (("users",), {"query": ""}),
    ]
    for prefix, options in searches:
        mine = await ours.asearch(prefix, **options)
        theirs = await reference.asearch(prefix, **options)
        assert [(r.namespace, r.key) for r in mine] == [(r.namespace, r.key) for r in theirs]
        for a, b in zip(mine, theirs, strict=True):
            assert (a.score is None) == (b.score is None), (prefix, options)
            assert a.score == pytest.approx(b.score, abs=1e-5)
    for store in (ours, reference):
        await store.adelete(("users", "u1"), "m1")
    mine = await ours.asearch(("users",), query="tea")
    theirs = await reference.asearch(("users",), query="tea")
    listed = [(r.namespace, r.key) for r in mine]
    assert listed == [(r.namespace, r.key) for r in theirs]
    assert (("users", "u1"), "m1") not in listed and len(listed) == 4


async def test_queries_are_embedded_as_queries_documents_as_documents(target: Target) -> None:
    recording = RecordingEmbeddings()
    store: BaseStore = target.adapter(GatewayStore, index=index(["text"], recording))
    await store.abatch([])
    await store.aput(("notes",), "n1", {"text": "the moon landing"})
    await store.aput(("notes",), "n2", {"text": "ocean tides"}, index=False)
    found = await store.asearch(("notes",), query="moon")
    assert recording.documents == ["the moon landing"]
    assert recording.queries == ["moon"]
    assert keys(found) == ["n1", "n2"]
    # The sync methods, from a worker thread as LangGraph calls them.
    await asyncio.to_thread(store.put, ("notes",), "n3", {"text": "moon phases"})
    found = await asyncio.to_thread(lambda: store.search(("notes",), query="moon phase"))
    assert recording.documents[-1] == "moon phases" and recording.queries[-1] == "moon phase"
    assert keys(found)[0] == "n3"


async def test_an_async_embeddings_function(target: Target) -> None:
    asked: list[list[str]] = []

    async def aembed(texts: list[str]) -> list[list[float]]:
        asked.append(texts)
        return embed_texts(texts)

    store: BaseStore = target.adapter(GatewayStore, index=index(["a", "b"], aembed))
    # One batch: the last put of an item is the one embedded, each text once.
    await store.abatch(
        [
            PutOp(("x",), "k1", {"a": "first words", "b": "shared"}),
            PutOp(("x",), "k1", {"a": "second words", "b": "shared"}),
            PutOp(("x",), "k2", {"a": "other", "b": "shared"}),
        ]
    )
    assert asked == [["second words", "shared", "other"]]
    results = await store.asearch(("x",), query="second")
    assert keys(results)[0] == "k1"


async def test_wrong_dimensions_are_refused_before_anything_is_stored(target: Target) -> None:
    store: BaseStore = target.adapter(GatewayStore, index=IndexConfig(dims=8, embed=embed_texts))
    with pytest.raises(ValueError, match="256 dimensions; the index's dims is 8"):
        await store.aput(("x",), "k", {"text": "words"})
    assert await store.aget(("x",), "k") is None


async def test_a_bad_vector_is_a_bad_request(target: Target) -> None:
    agent = target.agent_store()
    put = {"op": "put", "namespace": ["x"], "key": "k", "value": {"a": 1}}
    for vectors in ("no", [{"field": "a", "vector": "!!"}], [{"field": "a", "vector": "AAC/"}]):
        with pytest.raises(StoreError) as refused:
            await agent.call("langgraph.store", {"ops": [{**put, "vectors": vectors}]})
        assert refused.value.code == "BadRequest"
    search = {"op": "search", "namespace_prefix": [], "query_vector": ""}
    with pytest.raises(StoreError, match="query_vector is a vector"):
        await agent.call("langgraph.store", {"ops": [search]})


async def test_without_an_index_a_query_is_ignored_as_in_memory_store_does(
    target: Target,
) -> None:
    ours: BaseStore = target.adapter(GatewayStore)
    reference = InMemoryStore()
    for store in (ours, reference):
        await store.aput(("users",), "a", {"text": "likes tea"}, index=["text"])
        await store.aput(("users",), "b", {"text": "likes coffee"})
    mine = await ours.asearch(("users",), query="coffee")
    theirs = await reference.asearch(("users",), query="coffee")
    assert [(r.key, r.score) for r in mine] == [(r.key, r.score) for r in theirs]
    assert [r.key for r in mine] == ["a", "b"]


# -- what one backend shows: the vectors' rows ---------------------------------------------


def _vector_rows(path: Path) -> list[tuple[str, str, str, int]]:
    with closing(sqlite3.connect(path)) as conn:
        found = conn.execute(
            "SELECT path, key, field, length(vector) FROM lg_item_vectors ORDER BY key, field"
        ).fetchall()
    return [tuple(row) for row in found]


async def test_vectors_are_replaced_by_a_put_and_removed_with_the_item(tmp_path: Path) -> None:
    sessions = SQLiteStore(tmp_path / "s.db")
    store = GatewayStore.from_store(sessions, index=index(["text", "tags[*]"]))
    try:
        await store.aput(("a",), "k1", {"text": "one", "tags": ["x", "y"]})
        await store.aput(("a",), "k2", {"text": "two"})
        assert _vector_rows(tmp_path / "s.db") == [
            ('["a"]', "k1", "tags[*].0", 4 * DIMENSIONS),
            ('["a"]', "k1", "tags[*].1", 4 * DIMENSIONS),
            ('["a"]', "k1", "text", 4 * DIMENSIONS),
            ('["a"]', "k2", "text", 4 * DIMENSIONS),
        ]
        await store.aput(("a",), "k1", {"text": "uno"})
        await store.aput(("a",), "k2", {"text": "dos"}, index=False)
        assert _vector_rows(tmp_path / "s.db") == [('["a"]', "k1", "text", 4 * DIMENSIONS)]
        await store.adelete(("a",), "k1")
        assert _vector_rows(tmp_path / "s.db") == []
    finally:
        await store.aclose()
        await sessions.close()


# -- the gateway's own embeddings model, by name -------------------------------------------


@pytest.fixture(scope="module")
def embeddings() -> Iterator[tuple[FakeEmbeddings, str]]:
    fake = FakeEmbeddings()
    with serve(fake.app) as url:
        yield fake, url


@pytest.mark.api
async def test_embed_names_the_gateways_embeddings_model(
    fake_upstream: tuple[FakeUpstream, str],
    embeddings: tuple[FakeEmbeddings, str],
    tmp_path: Path,
) -> None:
    fake, _ = embeddings
    with file_search_gateway(fake_upstream, embeddings, tmp_path) as gateway:
        config = IndexConfig(dims=DIMENSIONS, embed="embed-small", fields=["text"])
        store = GatewayStore.connect(gateway.url, namespace="semantic", index=config)
        try:
            await store.aput(("docs",), "d1", {"text": "penguins huddle in winter"})
            await store.aput(("docs",), "d2", {"text": "tax forms are due in spring"})
            found = await store.asearch(("docs",), query="where do penguins huddle")
            synced = await asyncio.to_thread(store.search, ("docs",), query="tax forms")
        finally:
            await store.aclose()
        unknown = IndexConfig(dims=DIMENSIONS, embed="no-such-model")
        refusing = GatewayStore.connect(gateway.url, namespace="semantic", index=unknown)
        try:
            with pytest.raises(StoreError) as refused:
                await refusing.aput(("docs",), "d3", {"text": "never stored"})
            assert await refusing.aget(("docs",), "d3") is None
        finally:
            await refusing.aclose()
    assert refused.value.status == 400 and "no-such-model" in refused.value.message
    assert [body["input"] for body in fake.requests] == [
        ["penguins huddle in winter"],
        ["tax forms are due in spring"],
        ["where do penguins huddle"],
        ["tax forms"],
    ]
    assert {body["model"] for body in fake.requests} == {"hash-256"}
    assert keys(found) == ["d1", "d2"] and keys(synced) == ["d2", "d1"]
    expected = cosine(embed("where do penguins huddle"), embed("penguins huddle in winter"))
    assert found[0].score == pytest.approx(expected, abs=1e-5)


@pytest.mark.unit
async def test_a_model_name_needs_a_gateway() -> None:
    from session import MemoryStore

    sessions = MemoryStore()
    try:
        with pytest.raises(ValueError, match="names a gateway's embeddings model"):
            GatewayStore.from_store(sessions, index=IndexConfig(dims=8, embed="embed-small"))
    finally:
        await sessions.close()
