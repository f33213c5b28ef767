"""``gateway show``: a stored response, its chain or a conversation, as a person reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
import yaml

from gateway import create_app, load_config
from gateway.cli.show import chain_of, render_conversation, render_response
from session import (
    Conversation,
    Item,
    MemoryStore,
    RequestSnapshot,
    ResponseSnapshot,
    StoredResponse,
)

from .fake_upstream import FakeUpstream, Reply
from .records import turn
from .servers import run_cli as gateway
from .servers import serve

pytestmark = [pytest.mark.unit]

CREATED = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def every_kind_of_item() -> StoredResponse:
    return StoredResponse(
        id="resp_2",
        previous_response_id="resp_1",
        created_at=CREATED,
        completed_at=CREATED + 2,
        status="incomplete",
        request=RequestSnapshot(
            model="chat-model",
            instructions="Be brief.\nAnswer in French.",
            tools=[{"type": "function", "name": "get_weather"}, {"type": "web_search"}],
            metadata={"run": "7"},
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Weather here?"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                        {"type": "input_file", "filename": "map.pdf", "file_data": "..."},
                    ],
                },
                {"type": "function_call_output", "call_id": "call_0", "output": "rain"},
            ],
        ),
        response=ResponseSnapshot(
            output=[
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Need a lookup."}],
                    "encrypted_content": "gwr1.sealed",
                },
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city":"Paris"}',
                },
                {"type": "custom_tool_call", "call_id": "call_2", "name": "patch", "input": "+x"},
                {"type": "web_search_call", "id": "ws_1", "action": {"query": "paris"}},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
            ],
            usage={
                "input_tokens": 20,
                "output_tokens": 5,
                "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 8},
                "output_tokens_details": {"reasoning_tokens": 3},
            },
            incomplete_details={"reason": "max_output_tokens"},
        ),
        metadata={"user": "ada"},
    )


def test_a_response_reads_as_its_fields_then_its_items_in_order() -> None:
    assert render_response(every_kind_of_item()) == "\n".join(
        [
            "response resp_2",
            "  project      default",
            "  model        chat-model",
            "  status       incomplete",
            "  created      2026-01-01T00:00:00Z",
            "  completed    2026-01-01T00:00:02Z",
            "  previous     resp_1",
            "  tools        get_weather, web_search",
            "  usage        input 20 (cached 8), output 5 (reasoning 3), total 25",
            "  incomplete   max_output_tokens",
            '  metadata     {"run": "7"}',
            "  user         ada",
            "",
            "instructions",
            "  Be brief.",
            "  Answer in French.",
            "user",
            "  Weather here?",
            "  [image]",
            "  [file map.pdf]",
            "tool output (call_0)",
            "  rain",
            "reasoning",
            "  Need a lookup.",
            "  [encrypted state kept]",
            "tool call get_weather (call_1)",
            '  {"city": "Paris"}',
            "tool call patch (call_2)",
            "  +x",
            "web_search_call",
            '  {"action": {"query": "paris"}}',
            "assistant",
            "  [refusal] No.",
        ]
    )


def test_a_failed_response_shows_its_error_and_an_unfinished_one_its_instance() -> None:
    failed = turn("resp_f", status="failed")
    failed.response.error = {"code": "server_error", "message": "The upstream broke."}
    assert "  error        server_error: The upstream broke." in render_response(failed)
    running = turn("resp_r", status="in_progress")
    running.instance_id = "gw_1"
    assert "  instance     gw_1" in render_response(running).splitlines()


def test_a_conversation_reads_as_its_fields_then_its_items() -> None:
    conversation = Conversation(id="conv_1", created_at=CREATED, metadata={"topic": "t"})
    items: list[Item] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "message", "role": "assistant", "content": "Hello"},
    ]
    assert render_conversation(conversation, items).splitlines() == [
        "conversation conv_1",
        "  project      default",
        "  created      2026-01-01T00:00:00Z",
        "  items        2",
        '  metadata     {"topic": "t"}',
        "",
        "user",
        "  Hi",
        "assistant",
        "  Hello",
    ]


@pytest.mark.anyio
async def test_a_chain_is_shown_from_its_first_turn_whatever_its_statuses() -> None:
    store = MemoryStore()
    for record in (
        turn("resp_a"),
        turn("resp_b", "resp_a", status="failed"),
        turn("resp_c", "resp_b"),
    ):
        await store.save(record)
    shown = await chain_of(store, "default", "resp_c")
    headings = [line for line in shown.splitlines() if line.startswith(("---", "chain"))]
    assert headings == [
        "chain of 3 turns ending at resp_c",
        "--- turn 1 of 3 ---",
        "--- turn 2 of 3 ---",
        "--- turn 3 of 3 ---",
    ]
    assert shown.index("response resp_a") < shown.index("response resp_b")
    await store.delete("default", "resp_a")
    shown = await chain_of(store, "default", "resp_c")
    assert shown.splitlines()[:2] == [
        "chain of 2 turns ending at resp_c",
        "(its earlier turns are gone: Response 'resp_a' in the chain of previous responses"
        " no longer exists.)",
    ]


@pytest.mark.system
def test_gateway_show_prints_a_response_its_chain_and_a_conversation(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    session = {"sqlite": {"path": str(tmp_path / "s.db")}}
    raw = {"session": session, "providers": {"echo": {"wire_api": "echo"}}}
    config.write_text(yaml.safe_dump({**raw, "default_provider": "echo"}))
    with serve(create_app(load_config(config))) as url:
        body = {"model": "echo", "input": "My name is Ada.", "instructions": "Be brief."}
        first = httpx.post(f"{url}/v1/responses", json=body).json()["id"]
        body = {"model": "echo", "input": "Who am I?", "previous_response_id": first}
        second = httpx.post(f"{url}/v1/responses", json=body).json()["id"]
        items = [{"type": "message", "role": "user", "content": "Hi"}]
        conversation = httpx.post(f"{url}/v1/conversations", json={"items": items}).json()["id"]

    shown = gateway("show", second, "--config", str(config))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:4] == [
        f"response {second}",
        "  project      default",
        "  model        echo",
        "  status       completed",
    ]
    assert lines[-4:] == [
        "user",
        "  Who am I?",
        "assistant",
        "  echo: Who am I? | earlier: My name is Ada.",
    ]

    chain = gateway("show", second, "--chain", "--config", str(config)).stdout
    assert chain.startswith(f"chain of 2 turns ending at {second}\n")
    assert chain.index("instructions\n  Be brief.") < chain.index("--- turn 2 of 2 ---")

    talk = gateway("show", conversation, "--config", str(config)).stdout
    assert talk.splitlines()[0] == f"conversation {conversation}"
    assert talk.endswith("user\n  Hi\n")

    for args, message in (
        (["resp_missing"], "gateway: Response with id 'resp_missing' not found.\n"),
        ([second, "--project", "other"], f"gateway: Response with id '{second}' not found.\n"),
        (
            [conversation, "--chain"],
            f"gateway: --chain follows responses; {conversation} is a conversation\n",
        ),
    ):
        refused = gateway("show", *args, "--config", str(config))
        assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", message)


@pytest.mark.system
def test_show_aligns_every_field_and_reads_the_route_attempt_by_attempt(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    fake, url = fake_upstream
    chat = {"wire_api": "chat_completions", "base_url": f"{url}/v1"}
    keys = [{"key": "sk-key-one-1111"}, {"key": "sk-key-two-2222"}]
    raw = {
        "session": {"sqlite": {"path": str(tmp_path / "s.db")}},
        "providers": {"keyed": {**chat, "api_keys": keys}},
        "models": {"two-keys": {"provider": "keyed", "upstream_model": "model-keyed"}},
    }
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    fake.script(Reply(status=429, error_body={"error": {"message": "slow down"}}))
    with serve(create_app(load_config(config))) as gateway_url:
        body = {"model": "two-keys", "input": "hi", "stream": True}
        with httpx.stream("POST", f"{gateway_url}/v1/responses", json=body) as streamed:
            for line in streamed.iter_lines():
                if line.startswith("data: ") and '"response.created"' in line:
                    response_id = json.loads(line[6:])["response"]["id"]

    shown = gateway("show", response_id, "--config", str(config))
    assert shown.returncode == 0, shown.stderr
    fields = shown.stdout.split("\n\n")[0].splitlines()[1:]
    labels = [line for line in fields if not line.startswith("   ")]
    label = re.compile(r"  \w+(?: \w+)*  +(?=\S)")  # a label, then two spaces or more
    columns = {match.end() if (match := label.match(line)) else None for line in labels}
    assert columns == {15}, labels
    route = fields.index("  route        keyed/model-keyed")
    first, second = fields[route + 1 : route + 3]
    assert re.fullmatch(r" {15}keyed#\d  http_429  \d+\.\d+ s", first), first
    assert re.fullmatch(r" {15}keyed#\d  answered  \d+\.\d+ s", second), second
    assert first.split()[0] != second.split()[0]
    assert any(re.fullmatch(r"  first token  \d+\.\d+ s", line) for line in fields), fields
    assert "{" not in shown.stdout.split("\n\n")[0]


def test_a_fallback_names_its_deployment_and_a_long_key_widens_the_labels() -> None:
    record = turn("resp_fb")
    record.created_at = CREATED
    record.metadata = {
        "route": {
            "answered_by": "west/model-backup",
            "key": "west#0",
            "attempts": [
                {
                    "deployment": "east/model-primary",
                    "key": "east#0",
                    "outcome": "http_503",
                    "seconds": 0.01,
                },
                {
                    "deployment": "west/model-backup",
                    "key": "west#0",
                    "outcome": "answered",
                    "seconds": 0.2,
                },
            ],
        },
        "a_long_label_of_a_client": {"nested": [1]},
    }
    assert render_response(record).split("\n\n")[0].splitlines()[1:] == [
        "  project                   default",
        "  model                     echo",
        "  status                    completed",
        "  created                   2026-01-01T00:00:00Z",
        "  route                     west/model-backup",
        "                            east#0  http_503  0.01 s  east/model-primary",
        "                            west#0  answered  0.2 s",
        '  a_long_label_of_a_client  {"nested": [1]}',
    ]


def test_a_turn_that_moved_says_from_where_and_why() -> None:
    record = turn("resp_moved")
    record.created_at = CREATED
    attempt = {"deployment": "west/m", "key": "west#1", "outcome": "answered", "seconds": 0.2}
    moved = {"source": "chain", "target": "east/m east#0", "outcome": "moved", "reason": "http_500"}
    record.metadata = {
        "route": {"answered_by": "west/m", "key": "west#1", "attempts": [attempt],
                  "affinity": moved},
    }  # fmt: skip
    lines = render_response(record).split("\n\n")[0].splitlines()
    assert lines[-3:] == [
        "  route        west/m",
        "               west#1  answered  0.2 s",
        "               affinity (chain): moved from east/m east#0: http_500",
    ]
    record.metadata["route"]["affinity"] = {**moved, "outcome": "kept"}
    kept = render_response(record).split("\n\n")[0].splitlines()[-1]
    assert kept.strip() == "affinity (chain): kept on east/m east#0"
