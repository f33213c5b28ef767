"""``gateway export`` and ``gateway import``: a store moved between backends, line by line."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway import create_app, load_config
from gateway.cli.transfer import conversation_line, encode, response_line
from session import Conversation, SQLiteStore, StoredConversation

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .records import turn, user_item
from .servers import REPO, serve
from .servers import run_cli as gateway

pytestmark = [pytest.mark.system]

ALPHA = "sk-alpha-0123456789abcdef"
BETA = "sk-beta-0123456789abcdef"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
HEADER = b'{"format":"responses-gateway-export","kind":"header","version":1}\n'


def write_config(folder: Path, name: str, session: dict[str, Any], upstream: str = "") -> str:
    raw: dict[str, Any] = {
        "session": session,
        "auth": {
            "mode": "keys",
            "cache_seconds": 0,
            "keys": [{"key": ALPHA, "project": "alpha"}, {"key": BETA, "project": "beta"}],
        },
        "providers": {"echo": {"wire_api": "echo"}},
        "default_provider": "echo",
    }
    if upstream:
        raw["providers"]["fake-chat"] = {
            "wire_api": "chat_completions",
            "base_url": f"{upstream}/v1",
            "api_key": UPSTREAM_KEY,
        }
        raw["models"] = {"chat-model": {"provider": "fake-chat", "upstream_model": "up"}}
    path = folder / name
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def sqlite_config(folder: Path, upstream: str = "") -> str:
    session = {"backend": "sqlite", "sqlite": {"path": str(folder / "s.db")}}
    return write_config(folder, "sqlite.yaml", session, upstream)


def postgres_config(folder: Path, dsn: str, upstream: str = "") -> str:
    return write_config(
        folder, "postgres.yaml", {"backend": "postgres", "postgres": {"dsn": dsn}}, upstream
    )


class Client:
    """One project's calls to a gateway, each expected to succeed."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.headers = {"authorization": f"Bearer {key}"}

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(f"{self.url}{path}", json=body, headers=self.headers, timeout=30)
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def get(self, path: str) -> Any:
        answer = httpx.get(f"{self.url}{path}", headers=self.headers, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def turn(self, text: str | list[Any], **fields: Any) -> str:
        body = {"model": "chat-model", "input": text, **fields}
        response_id: str = self.post("/v1/responses", body)["id"]
        return response_id


def make_turns(alpha: Client, beta: Client, fake: FakeUpstream) -> dict[str, list[str]]:
    """Two projects' turns: a chain with a branch, a tool call whose signature the upstream
    wants back, reasoning, a conversation with items; the ids, by project."""
    root = alpha.turn("My name is Ada.", instructions="Be brief.", metadata={"run": "1"})
    second = alpha.turn("What is my name?", previous_response_id=root)
    branch = alpha.turn("Forget it.", previous_response_id=root, user="ada")
    fake.script(
        Reply(
            reasoning="Paris needs a lookup.",
            tool_calls=[("call_1", "get_weather", '{"city": "Paris"}')],
            finish_reason="tool_calls",
            thought_signature="sig-paris",
        )
    )
    call = alpha.turn("Weather in Paris?", previous_response_id=second, tools=[WEATHER])
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    answered = alpha.turn([output], previous_response_id=call, tools=[WEATHER])
    items = [{"type": "message", "role": "user", "content": "Hi, I am Grace."}]
    conversation = alpha.post("/v1/conversations", {"items": items, "metadata": {"topic": "t"}})
    in_conversation = alpha.turn("Who am I?", conversation=conversation["id"])
    beta_turn = beta.turn("Hello from beta.", model="echo")
    beta_conversation = beta.post("/v1/conversations", {"items": []})["id"]
    return {
        "alpha": [root, second, branch, call, answered, in_conversation],
        "alpha_conversations": [conversation["id"]],
        "beta": [beta_turn],
        "beta_conversations": [beta_conversation],
    }


def seen_by_the_app(alpha: Client, beta: Client, ids: dict[str, list[str]]) -> list[Any]:
    """What the API shows of every record: responses, their input items, conversations'."""
    seen: list[Any] = []
    for client, project in ((alpha, "alpha"), (beta, "beta")):
        for response_id in ids[project]:
            seen.append(client.get(f"/v1/responses/{response_id}"))
            seen.append(client.get(f"/v1/responses/{response_id}/input_items?order=asc"))
        for conversation_id in ids[f"{project}_conversations"]:
            seen.append(client.get(f"/v1/conversations/{conversation_id}"))
            seen.append(client.get(f"/v1/conversations/{conversation_id}/items?order=asc"))
    return seen


def continue_chain(alpha: Client, fake: FakeUpstream, head: str) -> Any:
    """The messages the upstream is sent to continue ``head`` (nothing is stored)."""
    alpha.turn("And tomorrow?", previous_response_id=head, tools=[WEATHER], store=False)
    return fake.last["messages"]


def test_moving_from_sqlite_to_postgres_is_two_commands_and_changes_nothing(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, postgres_dsn: str
) -> None:
    fake, upstream = fake_upstream
    source = sqlite_config(tmp_path, upstream)
    target = postgres_config(tmp_path, postgres_dsn, upstream)
    with serve(create_app(load_config(source))) as url:
        alpha, beta = Client(url, ALPHA), Client(url, BETA)
        ids = make_turns(alpha, beta, fake)
        before = seen_by_the_app(alpha, beta, ids)
        context = continue_chain(alpha, fake, ids["alpha"][4])
    signed = [c for m in context for c in m.get("tool_calls") or []]
    assert signed[0]["extra_content"]["google"]["thought_signature"] == "sig-paris"

    exported = tmp_path / "alpha-and-beta.jsonl"
    out = gateway("export", "--config", source, "--output", str(exported))
    assert out.returncode == 0, out.stderr
    assert out.stderr == (
        "exported 7 responses and 2 conversations; it holds the store's sealing secret\n"
    )
    into = gateway("import", str(exported), "--config", target)
    assert into.returncode == 0, into.stderr
    assert into.stdout == (
        "imported 7 responses and 2 conversations;"
        " skipped 0 responses and 0 conversations already stored\n"
    )

    again = gateway("export", "--config", target)
    assert again.returncode == 0, again.stderr
    assert again.stdout == exported.read_text()  # byte for byte
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    kinds = [line["kind"] for line in lines]
    assert kinds == [
        "header",
        "secret",
        *["conversation", *["response"] * 6],
        "conversation",
        "response",
        "end",
    ]
    assert [line["project"] for line in lines[2:-1]] == ["alpha"] * 7 + ["beta"] * 2
    assert [line["id"] for line in lines[3:9]] == ids["alpha"]  # oldest first

    with serve(create_app(load_config(target))) as url:
        alpha, beta = Client(url, ALPHA), Client(url, BETA)
        assert seen_by_the_app(alpha, beta, ids) == before
        # The same context, the tool call's signature unsealed with the moved secret.
        assert continue_chain(alpha, fake, ids["alpha"][4]) == context

    twice = gateway("import", str(exported), "--config", target)
    assert twice.returncode == 0, twice.stderr
    assert "imported 0 responses and 0 conversations; skipped 7 responses and 2" in twice.stdout
    assert gateway("export", "--config", target).stdout == exported.read_text()


def test_one_project_goes_to_standard_output_and_comes_back_from_standard_input(
    tmp_path: Path,
) -> None:
    source = sqlite_config(tmp_path)
    with serve(create_app(load_config(source))) as url:
        ids = [
            Client(url, ALPHA).turn("one", model="echo"),
            Client(url, BETA).turn("two", model="echo"),
        ]
    out = gateway("export", "--project", "beta", "--config", source)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["kind"] for line in lines] == ["header", "secret", "response", "end"]
    assert lines[2]["id"] == ids[1] and lines[-1] == {
        "kind": "end",
        "conversations": 0,
        "responses": 1,
    }

    (tmp_path / "other").mkdir()
    target = sqlite_config(tmp_path / "other")
    into = gateway_with_input(out.stdout, "import", "-", "--config", target)
    assert into.returncode == 0, into.stderr
    assert "imported 1 responses and 0 conversations" in into.stdout
    assert gateway("export", "--config", target).stdout == out.stdout


def gateway_with_input(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m gateway ARGS`` reading ``text`` on its standard input."""
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        input=text,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def export_file(path: Path, *lines: dict[str, Any] | bytes, end: dict[str, Any]) -> str:
    body = b"".join(line if isinstance(line, bytes) else encode(line) for line in lines)
    path.write_bytes(HEADER + body + encode(end))
    return str(path)


def test_a_line_that_does_not_validate_is_named_and_nothing_of_it_is_written(
    tmp_path: Path, postgres_dsn: str
) -> None:
    good = turn("resp_good", project="alpha")
    bad_status = response_line(turn("resp_bad", project="alpha")) | {"status": "bogus"}
    no_request = {k: v for k, v in response_line(turn("resp_half")).items() if k != "request"}
    nul = turn("resp_nul")
    nul.request.input[0]["content"][0]["text"] = "a\u0000b"  # PostgreSQL's JSON cannot hold it
    conversation = StoredConversation(Conversation(id="conv_ok", created_at=5.0), 9.0)
    nul_items = [user_item("i1", "fine"), user_item("i2", "a\u0000b")]
    nul_conversation = StoredConversation(Conversation(id="conv_nul", created_at=6.0), 9.0)
    unnamed = conversation_line(conversation, [{"type": "message"}]) | {"id": "conv_unnamed"}
    path = export_file(
        tmp_path / "mixed.jsonl",
        conversation_line(conversation, [user_item("i1", "kept")]),
        conversation_line(nul_conversation, nul_items),
        unnamed,
        response_line(good),
        bad_status,
        no_request,
        response_line(nul),
        b"not json\n",
        end={"kind": "end", "conversations": 3, "responses": 4},
    )
    target = postgres_config(tmp_path, postgres_dsn)
    into = gateway("import", path, "--config", target)
    assert into.returncode == 1
    problems = into.stderr.splitlines()
    assert problems[0].startswith(
        "gateway: line 3: conversation 'conv_nul': The session database refused a value"
    )
    assert problems[1].startswith("gateway: line 4: conversation 'conv_unnamed': items: ")
    assert "every item needs an id" in problems[1]
    assert problems[2].startswith("gateway: line 6: response 'resp_bad': status: Input should be")
    assert problems[3] == "gateway: line 7: response 'resp_half': missing request"
    assert problems[4].startswith(
        "gateway: line 8: response 'resp_nul': The session database refused a value"
    )
    assert problems[5].startswith("gateway: line 9: not JSON")
    assert len(problems) == 6
    assert "imported 1 responses and 1 conversations" in into.stdout

    shown = gateway("show", "conv_nul", "--config", target)  # not half written: not at all
    assert shown.returncode == 1 and "conv_nul" in shown.stderr
    exported = [
        json.loads(line) for line in gateway("export", "--config", target).stdout.splitlines()
    ]
    assert [(line["kind"], line.get("id")) for line in exported[2:-1]] == [
        ("response", "resp_good"),
        ("conversation", "conv_ok"),
    ]
    assert exported[3]["items"] == [user_item("i1", "kept") | {"status": "completed"}]


def test_a_file_that_is_not_a_whole_export_is_refused_or_reported(tmp_path: Path) -> None:
    target = sqlite_config(tmp_path)
    stranger = tmp_path / "stranger.jsonl"
    stranger.write_bytes(encode(response_line(turn("resp_1"))))
    refused = gateway("import", str(stranger), "--config", target)
    assert (refused.returncode, refused.stdout) == (1, "")
    first = stranger.read_text().splitlines()[0]
    assert refused.stderr == (
        f"gateway: {stranger} has no export header, so nothing is imported: an export's first"
        f" line is {HEADER.decode().strip()}; its first line is {first[:60]}...\n"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    refused = gateway("import", str(empty), "--config", target)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.startswith(f"gateway: {empty} has no export header")
    assert refused.stderr.endswith("; it is empty\n")
    newer = tmp_path / "newer.jsonl"
    newer.write_bytes(HEADER.replace(b'"version":1', b'"version":2'))
    refused = gateway("import", str(newer), "--config", target)
    assert "an export of version 2; this gateway reads version 1" in refused.stderr
    missing = gateway("import", str(tmp_path / "nowhere.jsonl"), "--config", target)
    assert missing.returncode == 1 and "nowhere.jsonl: No such file" in missing.stderr
    with closing(sqlite3.connect(tmp_path / "s.db")) as conn:
        assert conn.execute("SELECT count(*) FROM responses").fetchone() == (0,)

    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(HEADER + encode(response_line(turn("resp_1"))))
    reported = gateway("import", str(cut), "--config", target)
    assert reported.returncode == 1
    assert "the file ends without its end line: it was cut short" in reported.stderr
    assert "imported 1 responses" in reported.stdout


@pytest.mark.anyio
async def test_a_store_with_another_sealing_secret_is_told_without_showing_it(
    tmp_path: Path,
) -> None:
    target = sqlite_config(tmp_path)
    store = SQLiteStore(tmp_path / "s.db")
    await store.shared_secret("compaction", "the-target-secret-0123456789")
    await store.close()
    secret_line = {"kind": "secret", "name": "compaction", "value": "the-source-secret-987654"}
    path = export_file(
        tmp_path / "x.jsonl",
        secret_line,
        response_line(turn("resp_1")),
        end={"kind": "end", "conversations": 0, "responses": 1},
    )
    into = gateway("import", path, "--config", target)
    assert into.returncode == 1
    assert "line 2: the store's own sealing secret differs from the exported store's" in into.stderr
    assert "secret-987654" not in into.stderr + into.stdout
    assert "secret-0123456789" not in into.stderr + into.stdout
    assert "imported 1 responses" in into.stdout


def test_export_and_import_refuse_the_memory_backend(tmp_path: Path) -> None:
    config = write_config(tmp_path, "memory.yaml", {"backend": "memory"})
    for command in (["export"], ["import", "-"]):
        refused = gateway(*command, "--config", config)
        assert refused.returncode == 2 and "memory backend" in refused.stderr
