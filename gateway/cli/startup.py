"""What ``gateway serve`` and ``gateway check-config`` find before serving: the problems of a
configuration and of the machine it is to run on, the summary of what will run, and one line
for whatever stops the server at start-up."""

from __future__ import annotations

import errno
import logging
import os
import socket
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from session import (
    BackendNotInstalled,
    PostgresSettings,
    SessionError,
    SessionSettings,
    StoreUnavailable,
    check_backend_installed,
)

from ..config import GatewayConfig, ServerSettings
from .arguments import PACKAGE, version

# Every line about the server starting and stopping, whichever module writes it.
logger = logging.getLogger("gateway.server")

SQLITE_SPECIAL = (":memory:", "")  # names sqlite3 does not take for a file


@dataclass
class Findings:
    """What a look at a configuration and the machine found: problems of the configuration
    (exit status 2), problems of the machine (exit status 1), and warnings (no effect)."""

    config: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def exit_status(self) -> int:
        return 2 if self.config else 1 if self.environment else 0


def anchor_sqlite_path(session: SessionSettings, config_file: Path) -> None:
    """Make a relative ``session.sqlite.path`` relative to the configuration file's folder,
    so that the gateway finds its data whatever the working directory."""
    path = session.sqlite.path
    if path not in SQLITE_SPECIAL and not path.startswith("file:"):
        session.sqlite.path = str(config_file.absolute().parent / path)


# -- the machine -----------------------------------------------------------------------------


def examine(
    server: ServerSettings | None,
    session: SessionSettings | None,
    *,
    serving: bool,
    compaction_secret: bool = False,
) -> Findings:
    """Look at the machine for what ``server`` and ``session`` need. ``serving``: a database
    that cannot be reached is a problem when the gateway cannot start without it (no
    ``compaction.secret``), and a port in use is a problem (for ``check-config``, perhaps the
    gateway itself: a warning). The folders an SQLite file needs are created only to find out
    whether they can be, then removed again: the store makes them when it opens."""
    found = Findings()
    if session is not None:
        _examine_store(session, found, serving=serving, compaction_secret=compaction_secret)
    if server is not None and (failure := listen_failure(server.host, server.port)):
        problem = bind_problem(server.host, server.port, failure)
        if failure.errno == errno.EADDRINUSE and not serving:  # the gateway itself, perhaps
            found.warnings.append(f"{problem} (gateway serve would not start while it is)")
        else:
            found.environment.append(problem)
    return found


def _examine_store(
    session: SessionSettings, found: Findings, *, serving: bool, compaction_secret: bool
) -> None:
    try:
        check_backend_installed(session)
    except BackendNotInstalled as error:
        found.environment.append(f"session.backend: {error}")
        return
    if session.backend == "sqlite" and (problem := _sqlite_problem(session)):
        found.environment.append(f"session.sqlite.path: {problem}")
    if session.backend != "postgres":
        return
    if (location := postgres_location(session.postgres.dsn)) is None:
        found.config.append(
            "session.postgres.dsn: not a PostgreSQL connection string "
            "(e.g. postgresql://user:password@host:5432/database)"
        )
        return
    if (unreachable := postgres_unreachable(session.postgres)) is None:
        return
    down = f"session.postgres.dsn: the database at {location} is unreachable ({unreachable})"
    if compaction_secret:
        found.warnings.append(
            f"{down}; the gateway serves meanwhile, and requests that need the store get "
            "503 store_unavailable until it is back"
        )
    elif serving:
        found.environment.append(
            f"{down}; start it, or set compaction.secret (the gateway otherwise reads the "
            "secret it generated from the database at start-up) to serve while it is down"
        )
    else:
        found.warnings.append(
            f"{down}; gateway serve would not start until it is back, unless compaction.secret "
            "is set"
        )


def _sqlite_problem(session: SessionSettings) -> str | None:
    if session.sqlite.path in SQLITE_SPECIAL:
        return None
    return sqlite_problem(Path(session.sqlite.path))


def sqlite_problem(path: Path) -> str | None:
    """Why an SQLite file at ``path`` cannot be used (``None`` if it can). The folders it
    needs are created to find out, and removed again (those it created, emptied)."""
    made: list[Path] = []
    try:
        with _made_folders(path.parent, made):
            if path.is_dir():
                return f"{path} is a folder; name a file in it (e.g. {path / 'sessions.db'})"
            if path.exists():
                return _database_problem(path)
            with tempfile.TemporaryFile(dir=path.parent):
                return None
    except OSError as error:
        where = error.filename or path
        return f"cannot create {where} ({error.strerror}); choose a folder the gateway may write"


@contextmanager
def _made_folders(folder: Path, made: list[Path]) -> Iterator[None]:
    try:
        for missing in reversed([each for each in (folder, *folder.parents) if not each.exists()]):
            missing.mkdir()
            made.append(missing)
        yield
    finally:
        for created in reversed(made):
            with suppress(OSError):
                created.rmdir()


def _database_problem(path: Path) -> str | None:
    if not os.access(path, os.R_OK | os.W_OK):
        return f"{path}: no permission to read and write it"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"cannot create files in {path.parent} (SQLite keeps its journal beside {path.name})"
    try:
        with closing(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)) as conn:
            conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as error:
        return f"{path}: {error}; name another file, or move this one away"
    return None


def postgres_location(dsn: str) -> str | None:
    """``user@host:port/database`` of ``dsn``, never its password; ``None`` if it is not a
    connection string (psycopg's own message could repeat the password)."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except ProgrammingError:
        return None
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    database = f"/{parts['dbname']}" if parts.get("dbname") else ""
    return f"{user}{parts.get('host') or 'localhost'}{port}{database}"


def postgres_unreachable(settings: PostgresSettings) -> str | None:
    """Why the database cannot be reached now (its first line), or ``None`` if it can."""
    import psycopg

    timeout = max(1, int(settings.connect_timeout_seconds))
    try:
        with psycopg.connect(settings.dsn, connect_timeout=timeout):
            return None
    except psycopg.Error as error:
        return _scrubbed(str(error).strip().splitlines()[0], settings.dsn)


def _scrubbed(text: str, dsn: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    password = str(conninfo_to_dict(dsn).get("password") or "")
    return text.replace(password, "***") if password else text


def listen_failure(host: str, port: int) -> OSError | None:
    """Why the gateway cannot listen on ``host``:``port`` now (``None`` if it can)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            sock.bind(address)
    except OSError as error:
        return error
    return None


def bind_problem(host: str, port: int, error: OSError) -> str:
    """``error``, met listening on ``host``:``port``, as one line naming the setting."""
    if isinstance(error, socket.gaierror):
        return f"server.host: {host!r} does not resolve ({error.strerror})"
    if error.errno == errno.EADDRINUSE:
        return (
            f"server.port: {host}:{port} is in use by another process; stop it, or choose "
            "another port (--port; 0 takes a free one)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"server.host: {host} is not an address of this machine; use 127.0.0.1 (this "
            "machine only) or 0.0.0.0 (every interface)"
        )
    if error.errno == errno.EACCES:
        return f"server.port: {port} needs privileges to listen on; choose 1024 or above"
    return f"server.host, server.port: cannot listen on {host}:{port} ({error.strerror})"


# -- the configuration -----------------------------------------------------------------------


def routing_warning(config: GatewayConfig) -> str | None:
    """A configuration that routes no model answers every request 404."""
    if config.models or config.default_provider is not None:
        return None
    return (
        "models, default_provider: no model is routed (models is empty and default_provider "
        "is unset), so every request gets 404 model_not_found; add models or default_provider"
    )


def summary(config: GatewayConfig, config_file: Path) -> list[str]:
    """What will run: version, configuration, store, models, auth, workers (one line each,
    a line a model); no secret is in any."""
    lines = [
        f"{PACKAGE} {version()}, configuration {config_file.absolute()}",
        f"store: {store_description(config.session)}",
    ]
    for name in config.models:
        lines.append(f"model {name} -> " + " | ".join(_targets(config, name)))
    if (default := config.default_provider) is not None:
        wire = config.providers[default].wire_api
        lines.append(
            f"any other model -> {default} ({wire}), under its own name (default_provider)"
        )
    if (embeddings := config.file_search.embeddings_model) is not None:
        lines.append(
            f"file search: embeddings by {embeddings}; hybrid search fuses the store's full "
            "text (how vectors are compared is said once the store opens)"
        )
    lines.append(f"auth: {_auth(config)}")
    workers = config.server.workers
    lines.append(f"workers: {workers} process{'es' if workers > 1 else ''}")
    return lines


def store_description(session: SessionSettings) -> str:
    if session.backend == "memory":
        return "memory (nothing is kept once the gateway stops)"
    if session.backend == "sqlite":
        return f"sqlite, {session.sqlite.path}"
    return f"postgres, {postgres_location(session.postgres.dsn) or 'an unreadable dsn'}"


def _targets(config: GatewayConfig, name: str) -> Iterator[str]:
    routes = config.routes(name)
    for route in routes:
        provider = route.provider
        wire = provider.wire_api
        where = f"{wire} at {_shown_url(provider.base_url)}" if provider.base_url else wire
        weight = f", weight {route.weight:g}" if len(routes) > 1 else ""
        yield f"{route.provider_name} ({where}), upstream model {route.upstream_model}{weight}"


def _shown_url(url: str) -> str:
    """``url`` without what may hold a secret: user, password, query and fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _auth(config: GatewayConfig) -> str:
    auth = config.auth
    if auth.mode == "none":
        return "none: no API keys, callers on this machine only"
    static = f"{len(auth.keys)} in auth.keys, " if auth.keys else ""
    metrics = "" if auth.admin_key else "; /metrics closed (no auth.admin_key)"
    return f"API keys ({static}managed ones from gateway keys create){metrics}"


# -- what stops the server at start-up -------------------------------------------------------


def failure_line(error: BaseException, config: GatewayConfig) -> str:
    """One line for what stopped the server at start-up, naming the setting at fault."""
    session = config.session
    store_key = "session.postgres.dsn" if session.backend == "postgres" else "session.sqlite.path"
    if isinstance(error, StoreUnavailable) and session.backend == "postgres":
        return (
            f"{store_key}: {error.message} Start the database, or set compaction.secret "
            "to serve while it is down"
        )
    if isinstance(error, SessionError):
        return f"{store_key}: {error.message}"
    if isinstance(error, sqlite3.Error):
        return f"session.sqlite.path: {session.sqlite.path}: {error}"
    if type(error).__module__.startswith("psycopg"):
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return (
            f"{store_key}: the database refused start-up: {_scrubbed(first, session.postgres.dsn)}"
        )
    if isinstance(error, OSError):
        if error.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES):
            server = config.server
            return bind_problem(server.host, server.port, error)
        where = error.filename or session.sqlite.path
        if session.backend == "sqlite":
            return f"session.sqlite.path: cannot create {where} ({error.strerror})"
        return f"start-up failed: {where}: {error.strerror}"
    logger.debug("start-up failed", exc_info=error)
    return f"start-up failed: {type(error).__name__}: {error} (--log-level debug shows where)"
