"""``file_search`` run by the gateway for a chat model, through the strict ``openai`` SDK:
the model calls the offered search function, the gateway searches the project's vector
stores, and the answer carries a ``file_search_call`` item (with its results when
``include`` asks) and ``file_citation`` annotations; streamed and not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from .conftest import Gateway
from .fake_embeddings import FakeEmbeddings
from .fake_upstream import FakeUpstream, Reply
from .file_search_gateway import file_search_gateway, processed
from .servers import serve

pytestmark = [pytest.mark.api]

KEY_A, KEY_B = "sk-project-a-0123456789", "sk-project-b-0123456789"
AUTH = {
    "mode": "keys",
    "keys": [{"key": KEY_A, "project": "team-a"}, {"key": KEY_B, "project": "team-b"}],
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
    with file_search_gateway(fake_upstream, embeddings, tmp_path, auth=AUTH) as made:
        yield made


def search_call(query: str) -> Reply:
    arguments = json.dumps({"query": query})
    return Reply(tool_calls=[("c1", "file_search", arguments)], finish_reason="tool_calls")


def a_store(client: openai.OpenAI) -> tuple[str, dict[str, str]]:
    texts = {
        "release.md": b"The 2.0 release ships on the ninth of March.",
        "cats.txt": b"Cats sleep for most of the day.",
    }
    ids = {n: client.files.create(file=(n, t), purpose="assistants").id for n, t in texts.items()}
    store = client.vector_stores.create(name="docs", file_ids=list(ids.values()))
    processed(client, store.id)
    return store.id, ids


def test_a_chat_model_searches_files_and_cites_them(gateway: Gateway) -> None:
    client = gateway.client(api_key=KEY_A)
    store_id, ids = a_store(client)
    answer = "It ships on the ninth of March [1]."
    gateway.fake.script(search_call("release date"), Reply(text=answer))
    response = client.responses.create(
        model="chat-model",
        input="When is the release?",
        tools=[{"type": "file_search", "vector_store_ids": [store_id], "max_num_results": 2}],
        include=["file_search_call.results"],
    )
    call, message = response.output
    assert call.type == "file_search_call" and call.status == "completed"
    assert call.queries == ["release date"] and call.id.startswith("fs_")
    assert call.results is not None and call.results[0].filename == "release.md"
    assert call.results[0].file_id == ids["release.md"] and len(call.results) == 2
    assert message.type == "message" and response.output_text == answer
    cited = [a.model_dump() for a in message.content[0].annotations]  # type: ignore[union-attr]
    assert cited == [
        {
            "type": "file_citation",
            "file_id": ids["release.md"],
            "filename": "release.md",
            "index": answer.index("[1]"),
        }
    ]
    told = [m for m in gateway.fake.last["messages"] if m["role"] == "tool"]
    assert "[1] release.md" in told[0]["content"] and "ninth of March" in told[0]["content"]
    offered = [t["function"]["name"] for t in gateway.fake.requests[0]["tools"]]
    assert offered == ["file_search"]
    again = client.responses.retrieve(response.id)
    assert again.output[0].type == "file_search_call"


def test_results_are_left_out_unless_included_and_streams_show_the_search(
    gateway: Gateway,
) -> None:
    client = gateway.client(api_key=KEY_A)
    store_id, _ = a_store(client)
    gateway.fake.script(search_call("cats"), Reply(text="They sleep [1]."))
    tool = {"type": "file_search", "vector_store_ids": [store_id]}
    with client.responses.stream(model="chat-model", input="cats?", tools=[tool]) as stream:  # type: ignore[list-item]
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    searching = [k for k in kinds if k.startswith("response.file_search_call.")]
    assert searching == [
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
    ]
    call = final.output[0]
    assert call.type == "file_search_call" and call.results is None


def test_another_projects_or_an_unknown_store_is_a_400_naming_it(gateway: Gateway) -> None:
    store_id, ids = a_store(gateway.client(api_key=KEY_A))
    other = gateway.client(api_key=KEY_B)
    for wanted in (store_id, "vs_unknown"):
        with pytest.raises(openai.BadRequestError) as refused:
            other.responses.create(
                model="chat-model",
                input="x",
                tools=[{"type": "file_search", "vector_store_ids": [wanted]}],
            )
        assert wanted in refused.value.message
        assert refused.value.body["param"] == "tools[0].vector_store_ids"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        other.vector_stores.search(store_id, query="release")
    with pytest.raises(openai.NotFoundError):
        other.files.retrieve(ids["cats.txt"])
    mine = other.vector_stores.create(name="b")
    with pytest.raises(openai.NotFoundError):
        other.vector_stores.files.create(vector_store_id=mine.id, file_id=ids["cats.txt"])
    assert other.files.list().data == []
