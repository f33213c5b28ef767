"""Compaction: the gateway summarises for models that cannot, in a sealed compaction item."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway import create_app
from gateway.context.compaction import PROMPT, SUMMARY_FRAME, expand, is_ours
from gateway.sealing import Sealer

from .conftest import Gateway, gateway_config
from .fake_upstream import FakeUpstream, Reply
from .servers import serve

pytestmark = [pytest.mark.api]

SUMMARY = "Goals: ship the parser. Files: src/parse.py. Next steps: add tests."
LONG = "a long answer full of detail " * 30


def post(url: str, body: dict[str, Any], key: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{url}/v1/responses", json=body, headers=headers, timeout=30)


def long_chain(gateway: Gateway, turns: int = 4) -> str:
    previous: str | None = None
    for n in range(turns):
        gateway.fake.script(Reply(text=f"answer {n}: {LONG}"))
        body: dict[str, Any] = {"model": "chat-model", "input": f"question {n}"}
        if previous:
            body["previous_response_id"] = previous
        previous = post(gateway.url, body).json()["id"]
    assert previous is not None
    return previous


def context_size(request: dict[str, Any]) -> int:
    return len(json.dumps(request["messages"]))


def test_compact_then_continue_with_a_much_smaller_context(gateway: Gateway) -> None:
    last = long_chain(gateway)
    gateway.fake.script(Reply(text=SUMMARY))
    compacted = httpx.post(
        f"{gateway.url}/v1/responses/compact",
        json={"model": "chat-model", "input": "question 4", "previous_response_id": last},
    )
    assert compacted.status_code == 200, compacted.text
    result = compacted.json()
    assert result["object"] == "response.compaction" and result["usage"]["input_tokens"] == 11
    *users, item = result["output"]
    assert [u["role"] for u in users] == ["user"] * 5
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("gwc1.")
    assert SUMMARY not in json.dumps(result)  # sealed, not readable
    asked = gateway.fake.last
    assert asked["messages"][0] == {"role": "system", "content": PROMPT}
    assert "answer 3:" in asked["messages"][1]["content"]  # the transcript to summarise
    before = context_size(asked)

    # Codex sends the compacted history back with the new input, and no previous id.
    answer = post(
        gateway.url,
        {"model": "chat-model", "input": [*result["output"], {"role": "user", "content": "go"}]},
    )
    assert answer.status_code == 200, answer.text
    sent = gateway.fake.last["messages"]
    assert sent[-2] == {"role": "user", "content": SUMMARY_FRAME + SUMMARY}
    assert sent[-1]["content"] == "go" and not any(m["role"] == "assistant" for m in sent)
    after = context_size(gateway.fake.last)
    assert after * 3 < before, (before, after)


def test_a_compaction_trigger_answers_with_one_compaction_item(gateway: Gateway) -> None:
    last = long_chain(gateway, 3)
    gateway.fake.script(Reply(text=SUMMARY))
    body = {
        "model": "chat-model",
        "input": [{"type": "compaction_trigger"}],
        "previous_response_id": last,
        "stream": True,
    }
    with httpx.stream("POST", f"{gateway.url}/v1/responses", json=body, timeout=30) as sse:
        events = [json.loads(line[6:]) for line in sse.iter_lines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    (item,) = events[-1]["response"]["output"]
    assert item["type"] == "compaction"
    gateway.fake.script(Reply(text="carrying on"))
    follow = post(
        gateway.url,
        {
            "model": "chat-model",
            "input": "and now?",
            "previous_response_id": events[-1]["response"]["id"],
        },
    )
    assert follow.status_code == 200, follow.text
    sent = gateway.fake.last["messages"]
    assert [m["role"] for m in sent] == ["user"] * 5  # 3 questions, the summary, the new one
    assert sent[3]["content"] == SUMMARY_FRAME + SUMMARY


def test_tampered_or_foreign_items_are_refused(gateway: Gateway) -> None:
    gateway.fake.script(Reply(text=SUMMARY))
    result = httpx.post(
        f"{gateway.url}/v1/responses/compact", json={"model": "chat-model", "input": "hello"}
    ).json()
    item = result["output"][-1]
    tampered = {**item, "encrypted_content": item["encrypted_content"][:-4] + "AAAA"}
    refused = post(gateway.url, {"model": "chat-model", "input": [tampered]})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["param"], error["code"]) == ("input[0]", "invalid_encrypted_content")


def test_a_token_is_bound_to_its_project() -> None:
    sealer = Sealer("0123456789abcdef-secret")
    token = sealer.seal("team-a", SUMMARY)
    assert sealer.open("team-a", token) == SUMMARY
    assert sealer.open("team-b", token) is None
    assert Sealer("another-secret-0123456789").open("team-a", token) is None
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": token}
    with pytest.raises(Exception, match="not made by this gateway"):
        expand(sealer, "team-b", [], [item])


def test_another_projects_token_is_refused_over_http(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake = fake_upstream[0]
    keys = [
        {"key": "sk-team-a-0123456789", "project": "a"},
        {"key": "sk-team-b-0123456789", "project": "b"},
    ]
    config = gateway_config(
        fake_upstream[1], tmp_path / "p.db", auth={"mode": "keys", "keys": keys}
    )
    fake.script(Reply(text=SUMMARY))
    with serve(create_app(config)) as url:
        made = httpx.post(
            f"{url}/v1/responses/compact",
            json={"model": "chat-model", "input": "hi"},
            headers={"authorization": "Bearer sk-team-a-0123456789"},
        ).json()
        body = {"model": "chat-model", "input": made["output"]}
        assert post(url, body, "sk-team-b-0123456789").status_code == 400
        assert post(url, body, "sk-team-a-0123456789").status_code == 200


def test_a_responses_upstream_compacts_by_itself(gateway: Gateway) -> None:
    first = post(gateway.url, {"model": "resp-model", "input": "remember this"}).json()
    compacted = httpx.post(
        f"{gateway.url}/v1/responses/compact",
        json={"model": "resp-model", "input": "next", "previous_response_id": first["id"]},
    ).json()
    # Only the account that made it can read it: sealed with that account.
    sealed = compacted["output"][0]["encrypted_content"]
    assert sealed.startswith("gwr1.") and "opaque-upstream" not in sealed
    sent = gateway.fake.last
    assert sent["model"] == "upstream-resp" and "previous_response_id" not in sent
    assert [item.get("role") for item in sent["input"]] == ["user", "assistant", "user"]
    # Sent back, the same account receives its own item again.
    post(gateway.url, {"model": "resp-model", "input": compacted["output"]})
    assert gateway.fake.last["input"][-1]["encrypted_content"] == "opaque-upstream"


@pytest.mark.parametrize("stream", [False, True])
def test_context_management_compacts_past_its_threshold(gateway: Gateway, stream: bool) -> None:
    last = long_chain(gateway)
    gateway.fake.script(Reply(text=SUMMARY), Reply(text="fresh answer"))
    body = {
        "model": "chat-model",
        "input": "question 4",
        "previous_response_id": last,
        "context_management": [{"type": "compaction", "compact_threshold": 300}],
    }
    client = gateway.client()
    if stream:
        events = list(client.responses.create(**body, stream=True))  # type: ignore[call-overload]
        indexes = [e.output_index for e in events if e.type == "response.output_item.added"]
        assert indexes == [0, 1]
        response = events[-1].response  # type: ignore[union-attr]
    else:
        response = client.responses.create(**body)  # type: ignore[call-overload]
    compaction, message = response.output
    assert message.type == "message"
    assert compaction.type == "compaction" and response.output_text == "fresh answer"
    summarised, answered = gateway.fake.requests[-2:]
    assert summarised["messages"][0]["content"] == PROMPT
    assert answered["messages"][-2] == {"role": "user", "content": SUMMARY_FRAME + SUMMARY}
    assert not any(m["role"] == "assistant" for m in answered["messages"])

    gateway.fake.requests.clear()
    client.responses.create(
        model="chat-model",
        input="question 5",
        previous_response_id=response.id,
        extra_body={"context_management": body["context_management"]},
    )
    (sent,) = gateway.fake.requests  # below the threshold now: no second summary
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user"] * 6 + ["assistant", "user"]


@pytest.mark.parametrize("weights", [(1e6, 1e-6), (1e-6, 1e6)], ids=["responses", "chat"])
def test_a_model_on_a_responses_and_a_chat_deployment_is_compacted_by_the_gateway(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, weights: tuple[float, float]
) -> None:
    """Either deployment may answer, so neither compacts by itself: the gateway summarises,
    the same way whichever answers."""
    fake, url = fake_upstream
    deployments = [
        {"provider": "fake-responses", "upstream_model": "upstream-resp", "weight": weights[0]},
        {"provider": "fake-chat", "upstream_model": "upstream-chat", "weight": weights[1]},
    ]
    config = gateway_config(url, tmp_path / "s.db", models={"mixed": {"deployments": deployments}})
    with serve(create_app(config)) as gateway:
        fake.script(Reply(text=SUMMARY))
        answer = httpx.post(
            f"{gateway}/v1/responses/compact", json={"model": "mixed", "input": "the plan"}
        )
        assert answer.status_code == 200, answer.text
        fake.script(Reply(text=SUMMARY))
        asked = {"type": "message", "role": "user", "content": "the plan"}
        trigger = {"model": "mixed", "input": [asked, {"type": "compaction_trigger"}]}
        triggered = post(gateway, trigger)
        assert triggered.status_code == 200, triggered.text
    for compacted in (answer.json(), triggered.json()):
        [item] = [i for i in compacted["output"] if i["type"] == "compaction"]
        assert is_ours(item)
    assert not [r for r in fake.requests if "compaction_trigger" in json.dumps(r)]
    assert all(PROMPT[:40] in json.dumps(r) for r in fake.requests)
