"""``web_search`` run by the gateway for chat models, through the strict fake backends.

The fake Chat Completions model calls the offered search function; the gateway searches,
hands the numbered results back, and answers with ``web_search_call`` items and
``url_citation`` annotations as OpenAI does, which the strict ``openai`` SDK checks,
streamed (the SDK's ``responses.stream`` rebuilding what ``retrieve`` returns) and not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app

from .conftest import Gateway, gateway_config
from .fake_search import FakeSearch
from .fake_upstream import FakeUpstream, Reply
from .servers import serve
from .web_search_gateway import fake_searches, search, search_gateway, tool_messages

pytestmark = [pytest.mark.api]

SOURCES = "web_search_call.action.sources"


@pytest.fixture(scope="module")
def searches() -> Iterator[dict[str, tuple[FakeSearch, str]]]:
    with fake_searches() as served:
        yield served


@pytest.fixture
def searxng(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    searches: dict[str, tuple[FakeSearch, str]],
) -> Iterator[Gateway]:
    searches["searxng"][0].reset()
    with search_gateway(fake_upstream, tmp_path, [searches["searxng"]]) as gateway:
        yield gateway


def test_a_chat_model_searches_and_cites_what_it_found(
    searxng: Gateway, searches: dict[str, tuple[FakeSearch, str]]
) -> None:
    answer = "Python 3.14 is out [1], see also https://peps.python.org/pep-0745/."
    searxng.fake.script(search("python 3.14"), Reply(text=answer))
    response = searxng.client().responses.create(
        model="chat-model", input="What is new?", tools=[{"type": "web_search"}]
    )
    call, message = response.output
    assert call.type == "web_search_call" and call.id.startswith("ws_")
    assert call.status == "completed"
    assert call.action.type == "search" and call.action.query == "python 3.14"
    assert call.action.sources is None  # not asked for in ``include``
    assert message.type == "message" and response.output_text == answer
    assert message.content[0].type == "output_text"
    cited = [a.model_dump() for a in message.content[0].annotations]
    marker, url = answer.index("[1]"), answer.index("https://peps")
    assert cited == [
        {
            "type": "url_citation",
            "start_index": marker,
            "end_index": marker + 3,
            "url": "https://www.python.org/downloads/",
            "title": "Download Python",
        },
        {
            "type": "url_citation",
            "start_index": url,
            "end_index": url + len("https://peps.python.org/pep-0745/"),
            "url": "https://peps.python.org/pep-0745/",
            "title": "PEP 745 Python 3.14 schedule",
        },
    ]
    first, second = searxng.fake.requests
    offered = [tool["function"] for tool in first["tools"]]
    assert [f["name"] for f in offered] == ["web_search"]
    assert "[1]" in offered[0]["description"]
    (result,) = tool_messages(second)
    assert result["tool_call_id"] == "c1"
    assert "[1] Download Python\nURL: https://www.python.org/downloads/" in result["content"]
    assert "[2] PEP 745" in result["content"]
    fake = searches["searxng"][0]
    assert [r["params"] for r in fake.requests] == [{"q": "python 3.14", "format": "json"}]
    assert searxng.client().responses.retrieve(response.id).output == response.output


def test_include_sources_lists_every_result_of_a_search(searxng: Gateway) -> None:
    searxng.fake.script(search("paris weather"), Reply(text="Sunny [1]."))
    response = searxng.client().responses.create(
        model="chat-model",
        input="Weather?",
        tools=[{"type": "web_search_preview"}],
        include=[SOURCES],
    )
    action = response.output[0].action
    assert action.type == "search" and action.sources is not None
    assert [(s.type, s.url) for s in action.sources] == [
        ("url", "https://example.com/weather/paris")
    ]


def test_a_streamed_search_has_openais_events_and_rebuilds_the_stored_response(
    searxng: Gateway,
) -> None:
    searxng.fake.script(search("python 3.14"), Reply(text="It is out [2]."))
    client = searxng.client()
    with client.responses.stream(
        model="chat-model", input="News?", tools=[{"type": "web_search"}], include=[SOURCES]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    at = kinds.index("response.web_search_call.in_progress")
    assert kinds[at - 1 : at + 4] == [
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
    ]
    added, done = events[at - 1], events[at + 3]
    assert added.type == "response.output_item.added"
    assert added.item.type == "web_search_call" and added.item.status == "in_progress"
    assert done.type == "response.output_item.done" and done.item.status == "completed"
    annotation = next(e for e in events if e.type == "response.output_text.annotation.added")
    assert annotation.annotation is not None
    assert annotation.annotation.model_dump()["url"] == "https://peps.python.org/pep-0745/"
    assert kinds.index("response.output_text.annotation.added") < kinds.index(
        "response.content_part.done"
    )
    assert [e.type for e in events].count("response.completed") == 1
    stored = client.responses.retrieve(final.id)
    rebuilt = final.model_dump()["output"]
    for part in rebuilt[1]["content"]:
        part.pop("parsed")  # what the SDK's parsing helper adds to a part
    assert stored.model_dump()["output"] == rebuilt
    assert final.output[1].content[0].annotations[0].start_index == len("It is out ")


def test_allowed_domains_reach_the_backend_as_site_operators(
    searxng: Gateway, searches: dict[str, tuple[FakeSearch, str]]
) -> None:
    tool = {"type": "web_search", "filters": {"allowed_domains": ["python.org", "wikipedia.org"]}}
    searxng.fake.script(search("python"), Reply(text="ok"))
    response = searxng.client().responses.create(
        model="chat-model", input="q", tools=[tool], include=[SOURCES]
    )
    fake = searches["searxng"][0]
    assert fake.requests[0]["params"]["q"] == "python (site:python.org OR site:wikipedia.org)"
    sources = response.output[0].action.sources or []
    assert sources and all(
        s.url.split("/")[2].endswith(("python.org", "wikipedia.org")) for s in sources
    )
    offered = searxng.fake.requests[0]["tools"][0]["function"]["description"]
    assert "python.org, wikipedia.org" in offered


def test_search_context_size_sets_how_many_results_the_model_reads(searxng: Gateway) -> None:
    low = {"type": "web_search", "search_context_size": "low"}
    searxng.fake.script(search("python"), Reply(text="ok"))
    searxng.client().responses.create(model="chat-model", input="q", tools=[low])
    (result,) = tool_messages(searxng.fake.requests[1])
    assert "[3]" in result["content"] and "[4]" not in result["content"]  # 5 halved, up


def test_a_later_turn_reads_the_search_back(searxng: Gateway) -> None:
    client = searxng.client()
    searxng.fake.script(search("python 3.14"), Reply(text="Out [1]."))
    first = client.responses.create(
        model="chat-model", input="News?", tools=[{"type": "web_search"}], include=[SOURCES]
    )
    searxng.fake.script(Reply(text="You asked about Python."))
    client.responses.create(
        model="chat-model",
        input="What did I ask?",
        previous_response_id=first.id,
        tools=[{"type": "web_search"}],
    )
    messages = searxng.fake.last["messages"]
    calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["function"] == {
        "name": "web_search",
        "arguments": '{"query": "python 3.14"}',
    }
    (result,) = tool_messages(searxng.fake.last)
    assert "[1] https://www.python.org/downloads/" in result["content"]


def test_a_stateless_input_holding_a_search_reads_back_without_the_tool(
    searxng: Gateway,
) -> None:
    searched = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "paris"},
    }
    searxng.fake.script(Reply(text="ok"))
    searxng.client().responses.create(
        model="chat-model", input=[searched, {"role": "user", "content": "and?"}]
    )
    (result,) = tool_messages(searxng.fake.last)
    assert result["content"] == 'Searched the web for "paris"; the results were not kept.'
    assert "tools" not in searxng.fake.last


def test_max_tool_calls_stops_offering_the_search(searxng: Gateway) -> None:
    searxng.fake.script(search("python"), Reply(text="done"))
    searxng.client().responses.create(
        model="chat-model", input="q", tools=[{"type": "web_search"}], max_tool_calls=1
    )
    first, second = searxng.fake.requests
    assert first["tools"] and "tools" not in second


def test_a_client_function_and_a_search_in_one_turn(searxng: Gateway) -> None:
    mine = {"type": "function", "name": "web_search", "parameters": {"type": "object"}}
    searxng.fake.script(
        Reply(
            tool_calls=[("c1", "web_search_2", '{"query": "python"}'), ("c2", "web_search", "{}")],
            finish_reason="tool_calls",
        )
    )
    response = searxng.client().responses.create(
        model="chat-model", input="q", tools=[mine, {"type": "web_search"}]
    )
    assert [item.type for item in response.output] == ["web_search_call", "function_call"]
    assert response.output[1].name == "web_search"  # the client's own, left to it
    assert len(searxng.fake.requests) == 1


# -- backends ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["searxng", "brave", "tavily"])
def test_each_backend_answers_through_its_strict_fake(
    kind: str,
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    searches: dict[str, tuple[FakeSearch, str]],
) -> None:
    fake = searches[kind][0]
    fake.reset()
    tool = {
        "type": "web_search",
        "filters": {"allowed_domains": ["python.org"]},
        "user_location": {"type": "approximate", "country": "de"},
    }
    with search_gateway(fake_upstream, tmp_path, [searches[kind]]) as gateway:
        gateway.fake.script(search("python"), Reply(text="See [1]."))
        response = gateway.client().responses.create(
            model="chat-model", input="q", tools=[tool], include=[SOURCES]
        )
    call, message = response.output
    assert call.status == "completed"
    urls = [s.url for s in call.action.sources or []]
    assert urls and all(".python.org/" in url for url in urls)
    assert message.content[0].annotations[0].url == urls[0]
    (asked,) = fake.requests
    if kind == "brave":
        assert asked["params"] == {"q": "python site:python.org", "count": "5", "country": "DE"}
    elif kind == "tavily":
        assert asked["body"] == {
            "query": "python",
            "max_results": 5,
            "include_domains": ["python.org"],
        }
    else:
        assert asked["params"] == {"q": "python site:python.org", "format": "json"}


@pytest.mark.parametrize("mode", ["down", "garbage", "slow"])
def test_a_failing_backend_hands_the_search_to_the_next(
    mode: str,
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    searches: dict[str, tuple[FakeSearch, str]],
) -> None:
    failing, working = searches["brave"][0], searches["tavily"][0]
    failing.reset(mode)
    working.reset()
    backends = [searches["brave"], searches["tavily"]]
    with search_gateway(fake_upstream, tmp_path, backends, timeout_seconds=0.5) as gateway:
        gateway.fake.script(search("paris"), Reply(text="Sunny [1]."))
        response = gateway.client().responses.create(
            model="chat-model", input="q", tools=[{"type": "web_search"}]
        )
    assert response.status == "completed" and response.output[0].status == "completed"
    assert len(failing.requests) == 1 and len(working.requests) == 1
    (result,) = tool_messages(gateway.fake.requests[1])
    assert "Paris weather" in result["content"]
    failing.reset()


@pytest.mark.parametrize("mode", ["down", "garbage", "slow"])
def test_when_no_backend_answers_the_model_is_told_and_the_turn_completes(
    mode: str,
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    searches: dict[str, tuple[FakeSearch, str]],
) -> None:
    failing = searches["searxng"][0]
    failing.reset(mode)
    with search_gateway(
        fake_upstream, tmp_path, [searches["searxng"]], timeout_seconds=0.5
    ) as gateway:
        gateway.fake.script(search("paris"), Reply(text="The search failed."))
        with gateway.client().responses.stream(
            model="chat-model", input="q", tools=[{"type": "web_search"}]
        ) as stream:
            final = stream.get_final_response()
    assert final.status == "completed" and final.output[0].status == "failed"
    (result,) = tool_messages(gateway.fake.requests[1])
    assert result["content"].startswith("The web search failed (searxng: ")
    failing.reset()


def test_a_backend_refusing_the_key_is_a_failed_search(
    fake_upstream: tuple[FakeUpstream, str],
    tmp_path: Path,
    searches: dict[str, tuple[FakeSearch, str]],
) -> None:
    fake, url = searches["brave"]
    fake.reset()
    upstream, upstream_url = fake_upstream
    backend = {"kind": "brave", "api_key": "wrong", "url": f"{url}/res/v1/web/search"}
    config = gateway_config(
        upstream_url, tmp_path / "sessions.db", web_search={"backends": [backend]}
    )
    with serve(create_app(config)) as gateway_url:
        gateway = Gateway(gateway_url, config, upstream)
        upstream.script(search("paris"), Reply(text="It failed."))
        response = gateway.client().responses.create(
            model="chat-model", input="q", tools=[{"type": "web_search"}]
        )
        gateway.clients[0].close()
    assert response.status == "completed" and response.output[0].status == "failed"
    assert fake.requests[0]["headers"]["x-subscription-token"] == "wrong"
    (result,) = tool_messages(upstream.requests[1])
    assert "brave: it answered HTTP 422" in result["content"]


# -- refusals ---------------------------------------------------------------------------


def test_without_backends_web_search_stays_a_400(gateway: Gateway) -> None:
    answer = httpx.post(
        f"{gateway.url}/v1/responses",
        json={"model": "chat-model", "input": "q", "tools": [{"type": "web_search"}]},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "tools[0].type"


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "web_search", "search_context_size": "huge"}, "tools[0].search_context_size"),
        (
            {"type": "web_search", "filters": {"allowed_domains": [3]}},
            "tools[0].filters.allowed_domains",
        ),
        (
            {"type": "web_search", "user_location": {"country": "Germany"}},
            "tools[0].user_location.country",
        ),
    ],
)
def test_a_bad_web_search_option_is_a_400_naming_it(
    searxng: Gateway, tool: dict[str, Any], param: str
) -> None:
    answer = httpx.post(
        f"{searxng.url}/v1/responses",
        json={"model": "chat-model", "input": "q", "tools": [tool]},
    )
    assert answer.status_code == 400 and answer.json()["error"]["param"] == param
    assert searxng.fake.requests == [] and searxng.stored_rows() == 0
