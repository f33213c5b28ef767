"""Starting, stopping and checking a configuration, as a new user meets them: Ctrl-C, start-up
failures in one line, ``check-config`` finding everything in one run, ``--port``, the start-up
summary, ``--help`` and ``--version``."""

from __future__ import annotations

import argparse
import asyncio
import errno
import inspect
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml
from starlette.types import Message, Receive, Scope, Send

from gateway.cli.arguments import host_name, port_number
from gateway.cli.startup import anchor_sqlite_path, failure_line, summary
from gateway.config import parse_config
from gateway.edge.processes import client_url
from gateway.edge.server import GatewayServer, StartupWatch
from session import SessionSettings, StoreUnavailable

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import REPO, loopback_socket, refusing_url

pytestmark = [pytest.mark.system]

READY = re.compile(r"clients use (http://\S+)/v1 ")


def write_config(path: Path, upstream_url: str | None = None, **sections: Any) -> Path:
    """A configuration at ``path`` (its SQLite file beside it), with ``sections`` replacing
    the defaults; a fake Chat Completions provider when ``upstream_url`` is given."""
    config: dict[str, Any] = {
        "server": {"port": 0},
        "session": {"sqlite": {"path": str(path.parent / "s.db")}},
        "providers": {"echo": {"wire_api": "echo"}},
        "models": {"echo": {"provider": "echo"}},
    }
    if upstream_url is not None:
        config["providers"]["fake"] = {
            "wire_api": "chat_completions",
            "base_url": f"{upstream_url}/v1",
            "api_key": UPSTREAM_KEY,
        }
        config["models"]["chat-model"] = {"provider": "fake"}
    config.update(sections)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def gateway(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@contextmanager
def serving(
    config: Path, *args: str, cwd: Path = REPO, own_session: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """``gateway serve`` on ``config`` until the block ends (killed if still running); yields
    the process, the URL its ready line names and its log. ``own_session``: a process group
    of its own, as a shell's job in a terminal has."""
    log = config.parent / f"gateway-{time.monotonic_ns()}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config), *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=own_session,
        )
    try:
        deadline = time.monotonic() + 30
        while not (ready := READY.search(log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.05)
        yield process, ready.group(1), log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def stream_events(url: str, model: str, interrupt: Any) -> list[dict[str, Any]]:
    """The events of one streamed turn; ``interrupt()`` is called once the first arrives."""
    body = {"model": model, "input": "long", "stream": True}
    events = []
    with httpx.stream("POST", f"{url}/v1/responses", json=body, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if len(events) == 1:
                    interrupt()
    return events


# -- stopping --------------------------------------------------------------------------------


def test_ctrl_c_fails_streams_in_flight_as_sigterm_does_and_exits_0(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = fake_upstream
    fake.script(Reply(text="a long answer", delay=1.0))  # one chunk a second
    config = write_config(
        tmp_path / "config.yaml", upstream_url, server={"port": 0, "shutdown_grace_seconds": 1}
    )
    with serving(config) as (process, url, log):
        events = stream_events(url, "chat-model", lambda: process.send_signal(signal.SIGINT))
        assert events[-1]["type"] == "response.failed"
        assert "shut down" in events[-1]["response"]["error"]["message"]
        assert process.wait(timeout=30) == 0
    text = log.read_text()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert text.splitlines()[-1].endswith("INFO gateway.server [-] stopped")
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("SELECT status FROM responses").fetchall() == [("failed",)]


def test_a_second_ctrl_c_stops_at_once_without_a_traceback(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = fake_upstream
    fake.script(Reply(text="a long answer", delay=1.0))
    server = {"port": 0, "shutdown_grace_seconds": 600}  # never waited for: stopped at once
    config = write_config(tmp_path / "config.yaml", upstream_url, server=server)

    def twice() -> None:
        process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30
        while "Shutting down" not in log.read_text():  # the first is taken: the second forces
            assert time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)

    with serving(config) as (process, url, log):
        events = stream_events(url, "chat-model", twice)
        assert events[-1]["type"] == "response.failed"
        assert process.wait(timeout=30) == 0
    text = log.read_text()
    assert "Traceback" not in text and "ERROR" not in text


def test_ctrl_c_in_a_terminal_stops_each_worker_once_so_streams_finish(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    fake, upstream_url = fake_upstream
    fake.script(Reply(text="a short answer", delay=0.3))
    server = {"port": 0, "workers": 2, "shutdown_grace_seconds": 30}
    config = write_config(tmp_path / "config.yaml", upstream_url, server=server)
    with serving(config, own_session=True) as (process, url, log):
        workers = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        assert len(workers) == 2
        # The terminal signals the whole foreground process group; a worker told twice
        # would stop at once, cutting the stream.
        events = stream_events(url, "chat-model", lambda: os.killpg(process.pid, signal.SIGINT))
        assert events[-1]["type"] == "response.completed"
        assert process.wait(timeout=30) == 0
    assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
    text = log.read_text()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert re.search(r"ready: 2 workers serving; clients use http://127\.0\.0\.1:\d+/v1", text)


# -- start-up failures -----------------------------------------------------------------------


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_start_up_failures_are_one_line_naming_the_setting(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    unusable = write_config(
        tmp_path / "sqlite" / "config.yaml",
        session={"sqlite": {"path": str(tmp_path / "a-file" / "data" / "s.db")}},
    )
    failed = gateway("serve", "--config", str(unusable))
    assert failed.returncode == 1
    assert one_line(failed).startswith(
        f"gateway: session.sqlite.path: cannot create {tmp_path / 'a-file' / 'data'} "
        "(Not a directory)"
    )

    with loopback_socket() as taken:
        taken.listen()
        port = taken.getsockname()[1]
        busy = gateway(
            "serve", "--config", str(write_config(tmp_path / "config.yaml")), "--port", str(port)
        )
    assert busy.returncode == 1
    assert one_line(busy) == (
        f"gateway: server.port: 127.0.0.1:{port} is in use by another process; stop it, "
        "or choose another port (--port; 0 takes a free one)"
    )

    elsewhere = write_config(
        tmp_path / "host" / "config.yaml",
        server={"host": "192.0.2.1", "port": 0},  # TEST-NET-1: no machine's own address
        auth={"mode": "keys"},
    )
    away = gateway("serve", "--config", str(elsewhere))
    assert away.returncode == 1
    assert one_line(away).startswith("gateway: server.host: 192.0.2.1 is not an address")

    config = str(tmp_path / "config.yaml")
    for bad, complaint in (
        (["--port", "99999"], "argument --port: '99999' is not a port"),
        (["--port", "http"], "argument --port: 'http' is not a port"),
        (["--host", "http://0.0.0.0"], "argument --host: 'http://0.0.0.0': must be an IP"),
    ):
        refused = gateway("serve", "--config", config, *bad)
        assert refused.returncode == 2 and complaint in refused.stderr
        assert "Traceback" not in refused.stderr


def test_a_start_that_fails_leaves_no_data_folder_behind(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config.yaml", session={"sqlite": {"path": "data/deeper/sessions.db"}}
    )
    with loopback_socket() as taken:
        taken.listen()
        port = taken.getsockname()[1]
        busy = gateway("serve", "--config", str(config), "--port", str(port), cwd=tmp_path)
    assert busy.returncode == 1
    assert "is in use by another process" in one_line(busy)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["config.yaml"]


def test_postgres_down_at_start_up_refuses_to_start_without_a_compaction_secret(
    tmp_path: Path,
) -> None:
    with refusing_url() as down:
        port = down.rsplit(":", 1)[1]
        dsn = f"postgresql://gw:hunter2secret@127.0.0.1:{port}/gw"
        session = {"backend": "postgres", "postgres": {"dsn": dsn, "connect_timeout_seconds": 1}}
        refused = gateway(
            "serve", "--config", str(write_config(tmp_path / "config.yaml", session=session))
        )
        assert refused.returncode == 1
        line = one_line(refused)
        assert line.startswith(
            f"gateway: session.postgres.dsn: the database at gw@127.0.0.1:{port}/gw "
            "is unreachable ("
        )
        assert "Connection refused" in line and "set compaction.secret" in line
        assert "hunter2secret" not in line

        with_secret = write_config(
            tmp_path / "secret" / "config.yaml",
            session=session,
            compaction={"secret": "a-secret-of-32-characters-or-so-0"},
        )
        with serving(with_secret) as (process, url, log):
            answer = httpx.post(
                f"{url}/v1/responses", json={"model": "echo", "input": "hi"}, timeout=30
            )
            assert answer.status_code == 503
            assert answer.json()["error"]["code"] == "store_unavailable"
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
    text = log.read_text()
    assert re.search(
        r"WARNING gateway\.server \[-\] session\.postgres\.dsn: the database at gw@", text
    )
    assert "hunter2secret" not in text and "Traceback" not in text


# -- check-config ----------------------------------------------------------------------------


def test_check_config_reports_every_problem_in_one_run(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "server": {"port": "eighty"},
                "auth": {"mode": "keys", "keys": [{"key": "${NOT_SET_KEY_X}", "project": "p"}]},
                "session": {"sqlite": {"path": "a-file/data/s.db"}},
                "providers": {
                    "p": {"wire_api": "chat_completions", "base_url": "api.example.com/v1"}
                },
                "models": {"m": {"provider": "ghost"}, "n": {"provider": "p"}},
            }
        )
    )
    checked = gateway("check-config", "--config", str(config))
    assert checked.returncode == 2
    assert checked.stdout == ""
    assert checked.stderr.splitlines() == [
        f"gateway: invalid configuration ({config}):",
        "  auth.keys[0].key: environment variable NOT_SET_KEY_X is not set",
        "  models.m.provider: unknown provider 'ghost'",
        "  providers.p.base_url: must start with http:// or https:// "
        "(e.g. https://api.deepseek.com/v1)",
        "  server.port: Input should be a valid integer, unable to parse string as an integer",
        f"gateway: session.sqlite.path: cannot create {tmp_path / 'a-file' / 'data'} "
        "(Not a directory); choose a folder the gateway may write",
    ]


def test_check_config_warns_and_leaves_no_folder_behind(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "config.yaml",
        session={"sqlite": {"path": "deep/er/s.db"}},
        models={},
    )
    checked = gateway("check-config", "--config", str(config), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[:3] == [
        f"configuration OK: {config}",
        f"  responses-gateway {version('responses-gateway')}, configuration {config}",
        f"  store: sqlite, {tmp_path / 'deep' / 'er' / 's.db'}",
    ]
    assert checked.stderr.startswith(
        "gateway: warning: models, default_provider: no model is routed"
    )
    assert not (tmp_path / "deep").exists()

    with refusing_url() as down:
        dsn = f"postgresql://gw@127.0.0.1:{down.rsplit(':', 1)[1]}/gw"
        session = {"backend": "postgres", "postgres": {"dsn": dsn, "connect_timeout_seconds": 1}}
        postgres = gateway(
            "check-config", "--config", str(write_config(tmp_path / "config.yaml", session=session))
        )
    assert postgres.returncode == 0
    assert "configuration OK" in postgres.stdout
    assert one_line(postgres).startswith(
        "gateway: warning: session.postgres.dsn: the database at gw@127.0.0.1:"
    )

    with loopback_socket() as taken:
        taken.listen()
        server = {"port": taken.getsockname()[1]}
        busy = gateway(
            "check-config", "--config", str(write_config(tmp_path / "config.yaml", server=server))
        )
    assert busy.returncode == 0
    assert "is in use by another process" in one_line(busy)


# -- what runs -------------------------------------------------------------------------------


def test_the_start_up_summary_says_what_runs_and_where_the_data_lives(
    tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    upstream_url = fake_upstream[1].replace("http://", "http://user:pa55word@")
    config = write_config(
        tmp_path / "conf" / "config.yaml",
        session={"sqlite": {"path": "./data/sessions.db"}},
        providers={
            "echo": {"wire_api": "echo"},
            "fake": {
                "wire_api": "responses",
                "base_url": f"{upstream_url}/v1?key=q-secret",
                "api_key": UPSTREAM_KEY,
            },
        },
        models={
            "echo": {"provider": "echo"},
            "big": {"provider": "fake", "upstream_model": "up-big"},
        },
        default_provider="echo",
        auth={"mode": "keys", "keys": [{"key": "k" * 20, "project": "a"}]},
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with serving(config, cwd=elsewhere) as (process, url, log):
        headers = {"authorization": f"Bearer {'k' * 20}"}
        answer = httpx.post(
            f"{url}/v1/responses", json={"model": "echo", "input": "hi"}, headers=headers
        )
        assert answer.status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    assert (tmp_path / "conf" / "data" / "sessions.db").exists()
    assert not (elsewhere / "data").exists()
    lines = [line.split(" ", 2)[2] for line in log.read_text().splitlines()]
    port = url.rsplit(":", 1)[1]
    gateway_lines = [line for line in lines if " gateway.server " in f" {line}"]
    assert gateway_lines == [
        f"INFO gateway.server [-] responses-gateway {version('responses-gateway')}, "
        f"configuration {config}",
        f"INFO gateway.server [-] store: sqlite, {tmp_path / 'conf' / 'data' / 'sessions.db'}",
        f"INFO gateway.server [-] model big -> fake (responses at {fake_upstream[1]}/v1), "
        "upstream model up-big",  # yaml.safe_dump sorted the models
        "INFO gateway.server [-] model echo -> echo (echo), upstream model echo",
        "INFO gateway.server [-] any other model -> echo (echo), under its own name "
        "(default_provider)",
        "INFO gateway.server [-] auth: API keys (1 in auth.keys, managed ones from gateway keys "
        "create); /metrics closed (no auth.admin_key)",
        "INFO gateway.server [-] workers: 1 process",
        f"INFO gateway.server [-] ready: serving; clients use http://127.0.0.1:{port}/v1 "
        "(Ctrl-C stops)",
        "INFO gateway.server [-] stopped",
    ]
    text = log.read_text()
    assert "uvicorn.error" not in text and "INFO uvicorn [-] Application startup complete." in text
    for secret in ("pa55word", "q-secret", UPSTREAM_KEY, "k" * 20):
        assert secret not in text


def test_the_summary_follows_the_log_format(tmp_path: Path) -> None:
    server = {"port": 0, "workers": 2, "log_format": "json"}
    config = write_config(tmp_path / "config.yaml", server=server)
    with serving(config) as (process, url, log):
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ours = [record["message"] for record in records if record["logger"] == "gateway.server"]
    assert ours[1] == f"store: sqlite, {tmp_path / 's.db'}"
    assert "workers: 2 processes" in ours
    assert f"ready: 2 workers serving; clients use {url}/v1 (Ctrl-C stops)" in ours
    assert {record["logger"] for record in records} == {"gateway.server", "uvicorn"}


def test_help_is_plain_text_and_version_is_the_installed_one() -> None:
    helped = gateway("--help")
    assert helped.returncode == 0
    assert "``" not in helped.stdout and "check-config" in helped.stdout
    assert "docs/configuration.md" in helped.stdout
    shown = gateway("--version")
    assert shown.returncode == 0
    assert shown.stdout.strip() == f"gateway {version('responses-gateway')}"


# -- the pieces ------------------------------------------------------------------------------


@pytest.mark.unit
def test_a_relative_sqlite_path_is_relative_to_the_configuration_file(tmp_path: Path) -> None:
    for given, expected in (
        ("./data/sessions.db", str(tmp_path / "data" / "sessions.db")),
        ("/var/lib/gw/s.db", "/var/lib/gw/s.db"),
        (":memory:", ":memory:"),
    ):
        session = SessionSettings.model_validate({"sqlite": {"path": given}})
        anchor_sqlite_path(session, tmp_path / "config.yaml")
        assert session.sqlite.path == expected


@pytest.mark.unit
def test_the_command_line_checks_port_and_host() -> None:
    assert port_number("0") == 0 and port_number("65535") == 65535
    for bad in ("65536", "-1", "http", "8080.0"):
        with pytest.raises(argparse.ArgumentTypeError, match="0 to 65535"):
            port_number(bad)
    assert host_name("0.0.0.0") == "0.0.0.0" and host_name("::1") == "::1"
    with pytest.raises(argparse.ArgumentTypeError, match="without scheme or port"):
        host_name("localhost:8080")
    assert client_url("0.0.0.0", 80) == "http://127.0.0.1:80/v1"
    assert client_url("::", 80) == "http://[::1]:80/v1"


@pytest.mark.unit
def test_what_stops_the_server_is_one_line_naming_the_setting() -> None:
    sqlite = parse_config({"session": {"sqlite": {"path": "/srv/s.db"}}}, env={})
    postgres = parse_config(
        {"session": {"backend": "postgres", "postgres": {"dsn": "postgresql://u:pw@h/d"}}}, env={}
    )
    unavailable = StoreUnavailable("The session database is unavailable (PoolTimeout).")
    assert failure_line(unavailable, postgres) == (
        "session.postgres.dsn: The session database is unavailable (PoolTimeout). Start the "
        "database, or set compaction.secret to serve while it is down"
    )
    assert failure_line(sqlite3.DatabaseError("file is not a database"), sqlite) == (
        "session.sqlite.path: /srv/s.db: file is not a database"
    )
    in_use = OSError(errno.EADDRINUSE, "Address already in use")
    assert failure_line(in_use, sqlite).startswith("server.port: 127.0.0.1:8080 is in use")
    assert failure_line(RuntimeError("odd"), sqlite) == (
        "start-up failed: RuntimeError: odd (--log-level debug shows where)"
    )
    assert "\n" not in "".join(summary(postgres, Path("/srv/config.yaml")))
    assert "pw" not in " ".join(summary(postgres, Path("/srv/config.yaml")))


@pytest.mark.unit
def test_a_failed_start_up_is_kept_and_uvicorn_told_without_a_traceback() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        try:
            raise FileNotFoundError(2, "No such file or directory", "/nope")
        except FileNotFoundError:
            await send({"type": "lifespan.startup.failed", "message": "Traceback ..."})
            raise

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        sent.append(message)

    watch = StartupWatch(failing)
    asyncio.run(watch({"type": "lifespan"}, receive, send))
    assert isinstance(watch.error, FileNotFoundError)
    assert sent == [{"type": "lifespan.startup.failed", "message": ""}]


@pytest.mark.unit
def test_uvicorn_still_calls_what_the_gateway_server_overrides() -> None:
    """uvicorn's signal handler is ``handle_exit`` (which re-raises the signal once stopped,
    as a KeyboardInterrupt for SIGINT), and a failed start-up leaves by SystemExit."""
    capture = inspect.getsource(uvicorn.Server.capture_signals)
    assert "self.handle_exit" in capture and "raise_signal" in capture
    assert "sys.exit(STARTUP_FAILURE)" in inspect.getsource(uvicorn.Server.startup)
    assert "self.servers" in inspect.getsource(uvicorn.Server.startup)
    server = GatewayServer(parse_config({}, env={}))
    states = []
    for _ in range(2):
        server.handle_exit(signal.SIGINT, None)
        states.append((server.should_exit, server.force_exit))
    assert states == [(True, False), (True, True)]  # a second Ctrl-C stops at once
    assert not server._captured_signals  # nothing raised again once stopped
