"""``gateway keys``, ``prune``, ``usage``, ``show``, ``export`` and ``import``: commands run on
the store."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import astuple
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from session import SessionError, SessionStore, build_store, new_key

from ..config import GatewayConfig
from . import show, transfer


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    cells = [header, *[tuple("-" if v is None else str(v) for v in row) for row in rows]]
    widths = [max(len(row[n]) for row in cells) for n in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


async def _keys(args: argparse.Namespace, store: SessionStore, auth_mode: str) -> None:
    if args.action == "create":
        if args.requests_per_minute is not None and args.requests_per_minute < 1:
            raise SystemExit("gateway: --requests-per-minute must be at least 1")
        if args.budget_usd is not None and not args.budget_usd > 0:
            raise SystemExit("gateway: --budget-usd must be more than 0")
        if args.budget_tokens is not None and args.budget_tokens < 1:
            raise SystemExit("gateway: --budget-tokens must be at least 1")
        key, secret = new_key(
            args.project,
            name=args.name,
            requests_per_minute=args.requests_per_minute,
            budget_usd=args.budget_usd,
            budget_tokens=args.budget_tokens,
        )
        await store.create_key(key)
        print(secret)
        print(
            f"created {key.id} for project {key.project}; the secret above is shown only once",
            file=sys.stderr,
        )
        if auth_mode == "none":
            print(
                "gateway: warning: auth.mode is none: no API key is checked until auth.mode is"
                " keys (this key is kept, and works from then on)",
                file=sys.stderr,
            )
    elif args.action == "list":
        keys = await store.list_keys(args.project)
        rows: list[tuple[object, ...]] = [
            (
                key.id,
                key.project,
                key.name,
                _when(key.created_at),
                "active" if key.revoked_at is None else f"revoked {_when(key.revoked_at)}",
                key.requests_per_minute,
                key.budget_usd,
                key.budget_tokens,
            )
            for key in keys
        ]
        header = (
            "ID",
            "PROJECT",
            "NAME",
            "CREATED",
            "STATUS",
            "RPM",
            "BUDGET_USD",
            "BUDGET_TOKENS",
        )
        print(_table(header, rows))
    else:
        key = await store.revoke_key(args.key_id)
        print(f"revoked {key.id} (project {key.project}) at {_when(key.revoked_at or 0)}")


async def prune_all(store: SessionStore, before: float, batch: int = 500) -> tuple[int, int]:
    """Prune in batches until nothing is left; return (responses, conversations)."""
    responses = conversations = 0
    while pruned := await store.prune(before, batch):
        responses += pruned.responses
        conversations += pruned.conversations
    return responses, conversations


@contextmanager
def _export_target(output: str | None) -> Iterator[BinaryIO]:
    """Where an export goes; a file cut short by a failure never takes the name."""
    if output is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = Path(f"{output}.partial")
    try:
        with partial.open("wb") as out:
            yield out
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)


def _stream(args: argparse.Namespace) -> AbstractContextManager[BinaryIO | None]:
    """The file a command writes or reads, opened before the event loop starts."""
    if args.command == "export":
        return _export_target(args.output)
    if args.command == "import":
        return nullcontext(sys.stdin.buffer) if args.file == "-" else Path(args.file).open("rb")
    return nullcontext(None)


async def _export(
    args: argparse.Namespace, config: GatewayConfig, store: SessionStore, out: BinaryIO
) -> None:
    secret = None
    if config.compaction.secret is None:  # else the configuration carries it over
        secret = await transfer.stored_sealing_secret(store)
    counts = await transfer.export(store, out, args.project, secret)
    kept = "; it holds the store's sealing secret" if secret is not None else ""
    print(
        f"exported {counts.responses} responses and {counts.conversations} conversations{kept}",
        file=sys.stderr,
    )


async def _import(config: GatewayConfig, store: SessionStore, lines: BinaryIO, source: str) -> int:
    try:
        result = await transfer.Importer(store, config.compaction.secret).run(lines, source)
    except transfer.Refused as refused:
        print(f"gateway: {refused}", file=sys.stderr)
        return 1
    for problem in result.problems:
        print(f"gateway: {problem}", file=sys.stderr)
    written, skipped = result.written, result.skipped
    print(
        f"imported {written.responses} responses and {written.conversations} conversations;"
        f" skipped {skipped.responses} responses and {skipped.conversations} conversations"
        " already stored"
    )
    return 1 if result.problems else 0


async def _run(args: argparse.Namespace, config: GatewayConfig, stream: BinaryIO | None) -> int:
    store = build_store(config.session)
    try:
        if args.command == "show":
            print(await show.show(store, args.project, args.id, args.chain))
        elif args.command == "export":
            assert stream is not None
            await _export(args, config, store, stream)
        elif args.command == "import":
            assert stream is not None
            source = "standard input" if args.file == "-" else args.file
            return await _import(config, store, stream, source)
        elif args.command == "keys":
            await _keys(args, store, config.auth.mode)
        elif args.command == "prune":
            before = time.time() - args.older_than
            responses, conversations = await prune_all(store, before)
            print(
                f"deleted {responses} responses and {conversations} conversations "
                f"last active before {_when(before)}"
            )
        else:
            since = 0.0 if args.since is None else time.time() - args.since
            rows = await store.usage(args.project, since)
            print(
                _table(
                    (
                        "PROJECT",
                        "KEY",
                        "MODEL",
                        "RESPONSES",
                        "INPUT",
                        "OUTPUT",
                        "CACHED",
                        "HIT_RATE",
                        "REASONING",
                        "COST_USD",
                    ),
                    [
                        (
                            row.project,
                            row.key,
                            *astuple(row)[1:6],
                            _hit_rate(row.cached_tokens, row.input_tokens),
                            row.reasoning_tokens,
                            f"{row.cost_usd:.6f}",
                        )
                        for row in rows
                    ],
                )
            )
        return 0
    finally:
        await store.close()


def _hit_rate(cached: int, input_tokens: int) -> str:
    """The share of input tokens the provider read from its prompt cache."""
    return f"{cached / input_tokens:.1%}" if input_tokens else "-"


def run(args: argparse.Namespace, config: GatewayConfig) -> int:
    """Run one operator command on the configured store; return the exit status."""
    if config.session.backend == "memory":
        print(
            "gateway: the memory backend keeps nothing beyond its own process; "
            f"'{args.command}' needs session.backend sqlite or postgres",
            file=sys.stderr,
        )
        return 2
    try:
        with _stream(args) as stream:
            return asyncio.run(_run(args, config, stream))
    except SessionError as error:
        print(f"gateway: {error.message}", file=sys.stderr)
        return 1
    except OSError as error:  # the file to export to or import from
        where = f"{error.filename}: " if error.filename else ""
        print(f"gateway: {where}{error.strerror or error}", file=sys.stderr)
        return 1
