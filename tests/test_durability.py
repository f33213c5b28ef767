"""Proof of durability, read from the system calls of a real gateway under strace.

For every turn answered, the WAL write that committed it must be followed by a completed
sync of the WAL file before the answer left on the socket (``synchronous: full``); with
``normal`` some answers leave before any sync, which is what a power loss would take.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .fake_upstream import UPSTREAM_KEY, FakeUpstream, Reply
from .servers import start_instance

pytestmark = [pytest.mark.system]

TURNS = 40
AT_ONCE = 8
TRACED = "execve,pwrite64,write,writev,sendto,fsync,fdatasync"

_LINE = re.compile(r"^(?P<pid>\d+)\s+\S+\s+(?P<call>.*)$")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (?P<name>\w+) resumed>(?P<rest>.*)$")
# strace -y names each descriptor's file after it: 5</tmp/s.db-wal>, 12<socket:[4711]>.
_CALL = re.compile(r"^(?P<name>\w+)\((?P<fd>\d+)(?:<(?P<file>[^>]*)>)?")
_RESULT = re.compile(r"\)\s+=\s+(?P<result>-?\d+)")  # strace pads short calls
_MARKER = re.compile(r"reply to: (mk\d{4}x)")
SYNC_PROGRAM = "wal_syncer.py"


def _strace_works() -> str | None:
    """Why strace cannot trace here, or ``None``."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed (apt-get install strace)"
    probe = subprocess.run(
        [strace, "-f", "-o", "/dev/null", "-e", "trace=fsync", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()}"
    return None


@dataclass
class Trace:
    """What the strace log shows about the WAL file and the answers."""

    answers: dict[str, bool] = field(default_factory=dict)  # marker: durable when sent
    # marker: durable when sent, counting the syncs of the sync process alone
    by_sync_process: dict[str, bool] = field(default_factory=dict)
    wal_syncs: int = 0
    sync_processes: set[str] = field(default_factory=set)  # the pids of wal_syncer.py


def read_trace(log: Path) -> Trace:
    """Replay the log in its order (each traced thread and process stops at every traced
    call until strace has written it, so the order is causal): a WAL write gets a number,
    a sync of the WAL (in whichever process) covers the writes numbered before it started,
    and an answer is durable when the first WAL write holding its reply is covered by a
    sync completed before it."""
    trace = Trace()
    pending: dict[str, str] = {}  # pid: a call's text before it blocked
    sync_started: dict[str, int] = {}  # pid: the WAL writes a running sync covers
    writes = 0  # WAL writes so far
    written: dict[str, int] = {}  # marker: its first WAL write
    durable = 0  # WAL writes covered by a completed sync
    durable_by_process = 0  # the same, by the sync process's syncs
    for line in log.read_text(errors="replace").splitlines():
        matched = _LINE.match(line)
        if matched is None:
            continue
        pid, call = matched["pid"], matched["call"]
        if call.endswith(_UNFINISHED):
            pending[pid] = call = call[: -len(_UNFINISHED)]
            if _syncs_wal(call):
                sync_started[pid] = writes
            continue
        if (resumed := _RESUMED.match(call)) is not None:
            call = pending.pop(pid, resumed["name"] + "(") + resumed["rest"]
        elif _syncs_wal(call):
            sync_started[pid] = writes
        if call.startswith("execve(") and SYNC_PROGRAM in call:
            trace.sync_processes.add(pid)
        call_match = _CALL.match(call)
        if call_match is None:
            continue
        name, file = call_match["name"], call_match["file"] or ""
        result = _RESULT.search(call)
        if name in ("fsync", "fdatasync") and pid in sync_started:
            covered = sync_started.pop(pid)
            if result is not None and result["result"] == "0":
                trace.wal_syncs += 1
                durable = max(durable, covered)
                if pid in trace.sync_processes:
                    durable_by_process = max(durable_by_process, covered)
        elif name == "pwrite64" and file.endswith("-wal"):
            writes += 1
            for marker in _MARKER.findall(call):
                written.setdefault(marker, writes)
        elif name in ("write", "writev", "sendto") and file.startswith(("socket:", "TCP")):
            for marker in _MARKER.findall(call):
                trace.answers[marker] = marker in written and written[marker] <= durable
                trace.by_sync_process[marker] = (
                    marker in written and written[marker] <= durable_by_process
                )
    return trace


def _syncs_wal(call: str) -> bool:
    matched = _CALL.match(call)
    return (
        matched is not None
        and matched["name"] in ("fsync", "fdatasync")
        and (matched["file"] or "").endswith("-wal")
    )


def _config(tmp_path: Path, upstream_url: str, synchronous: str) -> Path:
    config = tmp_path / "config.yaml"
    sqlite = {"path": str(tmp_path / "s.db"), "synchronous": synchronous}
    provider = {
        "wire_api": "chat_completions",
        "base_url": f"{upstream_url}/v1",
        "api_key": UPSTREAM_KEY,
    }
    config.write_text(
        yaml.safe_dump(
            {
                "session": {"backend": "sqlite", "sqlite": sqlite},
                "providers": {"fake": provider},
                "default_provider": "fake",
            }
        )
    )
    return config


def _traced_child(tracer: subprocess.Popen[Any]) -> int:
    """The gateway's pid: strace's child (strace itself ignores SIGTERM)."""
    children = Path(f"/proc/{tracer.pid}/task/{tracer.pid}/children")
    for _ in range(100):
        if found := children.read_text().split():
            return int(found[0])
        time.sleep(0.05)
    raise RuntimeError("strace started no gateway")


def run_traced(tmp_path: Path, upstream: tuple[FakeUpstream, str], synchronous: str) -> Trace:
    """Serve ``TURNS`` turns, ``AT_ONCE`` at a time, from a gateway under strace; the first
    ``AT_ONCE`` answers are held upstream until all are asked, then come back together."""
    fake, upstream_url = upstream
    together = threading.Event()
    fake.script(
        *(
            Reply(text=f"reply to: mk{n:04d}x", gate=together if n < AT_ONCE else None)
            for n in range(TURNS)
        )
    )
    config = _config(tmp_path, upstream_url, synchronous)
    log = tmp_path / "strace.log"
    strace = ["strace", "-f", "-y", "--seccomp-bpf", "-tt", "-s", "65536", "-o", str(log)]
    tracer, url = start_instance(config, prefix=[*strace, "-e", f"trace={TRACED}"])
    try:
        with httpx.Client(base_url=url, timeout=60) as client:

            def turn(n: int) -> int:
                answer = client.post("/v1/responses", json={"model": "m", "input": f"turn {n}"})
                return answer.status_code

            with ThreadPoolExecutor(AT_ONCE) as pool:
                answers = pool.map(turn, range(TURNS))
                for _ in range(600):  # bounded: the first turns reach the upstream
                    if len(fake.requests) >= AT_ONCE:
                        break
                    time.sleep(0.05)
                together.set()
                assert set(answers) == {200}
    finally:
        together.set()
        os.kill(_traced_child(tracer), signal.SIGTERM)
        tracer.wait(timeout=60)
    return read_trace(log)


@pytest.fixture(scope="module")
def strace_usable() -> None:
    if (reason := _strace_works()) is not None:
        pytest.skip(reason)


def test_full_answers_a_turn_only_once_its_commit_is_synced(
    strace_usable: None, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    trace = run_traced(tmp_path, fake_upstream, "full")
    assert len(trace.answers) == TURNS
    assert all(trace.answers.values()), [m for m, ok in trace.answers.items() if not ok]
    # Turns answered together shared syncs (start-up's own syncs of the WAL included).
    assert 0 < trace.wal_syncs < TURNS
    # The syncs that made them durable were the sync process's (SQLite syncs the WAL
    # itself only at checkpoints and when the file is closed).
    assert len(trace.sync_processes) == 1
    assert all(trace.by_sync_process.values())


def test_normal_answers_turns_before_their_commit_is_synced(
    strace_usable: None, tmp_path: Path, fake_upstream: tuple[FakeUpstream, str]
) -> None:
    trace = run_traced(tmp_path, fake_upstream, "normal")
    assert len(trace.answers) == TURNS
    assert not all(trace.answers.values())  # a power loss would take these
    assert trace.sync_processes == set()  # nothing to sync, nothing started
