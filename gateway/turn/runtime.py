"""The gateway's runtime: what a configuration starts and stops around its turns (the store,
the providers' clients, traces, shared limits, the turn service, the file services and the
upkeep loops). The app's lifespan runs one; a test or a command can run turns on one without
HTTP, the same way.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from session import SessionStore, build_store
from session.redis_shared import RedisSharedLimits
from session.shared import SharedLimits

from ..config import GatewayConfig
from ..observability.measured_store import measured
from ..observability.metrics import Metrics
from ..observability.pool_metrics import PoolCollector
from ..sealing import Sealer
from ..tracing import Tracer, start_tracing
from ..upstream import ProviderClient
from ..upstream.transport.addresses import Resolver, SystemResolver
from .file_services import FileServices, file_services
from .service import ResponsesService
from .spending import Spending
from .upkeep import fail_stale_turns, keep_alive, prune_expired

SWEEP_INTERVAL_SECONDS = 60.0
UPKEEP_STOP_SECONDS = 5.0  # for a sweep's store operation under way at shutdown


@dataclass(frozen=True)
class Runtime:
    """What a running gateway holds, the same for every turn."""

    config: GatewayConfig
    store: SessionStore  # measured for the metrics and traces
    clients: Mapping[str, ProviderClient]  # by provider, for the wires that speak HTTP
    tracer: Tracer
    sealer: Sealer
    shared: SharedLimits  # rate limits, spend and cooldowns shared by instances
    spending: Spending
    service: ResponsesService
    files: FileServices

    @classmethod
    @asynccontextmanager
    async def started(
        cls,
        config: GatewayConfig,
        metrics: Metrics,
        *,
        store: SessionStore | None = None,
        resolver: Resolver | None = None,
    ) -> AsyncIterator[Runtime]:
        """The runtime of ``config``, until the block ends: then the turns under way get
        ``server.shutdown_grace_seconds`` to finish, the upkeep stops and everything closes.

        ``store`` replaces the configured backend (the caller then owns and closes it);
        ``resolver`` answers the names of the servers clients ask the gateway to reach
        (their MCP servers), by default the operating system's.
        """
        async with AsyncExitStack() as stack:
            opened = store
            if opened is None:
                opened = build_store(config.session)
                stack.push_async_callback(opened.close)
            clients = {
                name: await stack.enter_async_context(ProviderClient.connect(name, provider))
                for name, provider in config.providers.items()
                if provider.wire.http
            }
            pools = PoolCollector(clients)
            metrics.registry.register(pools)
            stack.callback(metrics.registry.unregister, pools)
            tracing = start_tracing(config.observability)
            stack.push_async_callback(tracing.shutdown)  # after the turns have finished
            measured_store = measured(opened, metrics, tracing.tracer)
            secret = config.compaction.secret or await measured_store.shared_secret(
                "compaction", secrets.token_urlsafe(32)
            )
            shared = await stack.enter_async_context(shared_limits(config, measured_store))
            spending = Spending(shared)
            sealer = Sealer(secret)
            service = ResponsesService(
                measured_store,
                config,
                clients,
                metrics,
                sealer,
                shared,
                spending,
                resolver or SystemResolver(),
                tracer=tracing.tracer,
            )
            grace = config.server.shutdown_grace_seconds
            files = await stack.enter_async_context(
                file_services(config, opened, clients, shared, spending, grace)
            )
            service.files = files
            stop_upkeep = asyncio.Event()
            upkeep = _upkeep(config, measured_store, service.instance_id, stop_upkeep)
            try:
                yield cls(
                    config,
                    measured_store,
                    clients,
                    tracing.tracer,
                    sealer,
                    shared,
                    spending,
                    service,
                    files,
                )
            finally:
                stop_upkeep.set()
                await asyncio.gather(
                    service.streams.finish(grace), service.background.finish(grace)
                )
                await _ended(upkeep)


@asynccontextmanager
async def shared_limits(config: GatewayConfig, store: SessionStore) -> AsyncIterator[SharedLimits]:
    """Where instances share rate limits, spend and cooldowns: Redis when
    ``routing.redis_url`` is set, else the session store itself."""
    if config.routing.redis_url is None:
        yield store
        return
    redis = RedisSharedLimits(config.routing.redis_url)
    try:
        yield redis
    finally:
        await redis.close()


def _upkeep(
    config: GatewayConfig, store: SessionStore, instance_id: str, stop: asyncio.Event
) -> list[asyncio.Task[None]]:
    """The store's upkeep loops, until ``stop`` is set: stale turns failed, this
    instance's heartbeat, and the retention sweep when ``session.retention`` is set."""
    stale = config.stale_after_seconds()
    loops = [
        fail_stale_turns(
            store, stale, config.session.stream_events_seconds, SWEEP_INTERVAL_SECONDS, stop
        ),
        keep_alive(
            store,
            instance_id,
            config.server.heartbeat_seconds,
            config.server.heartbeat_timeout_seconds,
            stop,
        ),
    ]
    if (retention := config.session.retention) is not None:
        loops.append(prune_expired(store, retention, config.session.retention_sweep_seconds, stop))
    return [asyncio.create_task(loop) for loop in loops]


async def _ended(tasks: list[asyncio.Task[None]]) -> None:
    """Wait for upkeep told to stop to finish its store operation; cut it past a bound."""
    _, running = await asyncio.wait(tasks, timeout=UPKEEP_STOP_SECONDS)
    for task in running:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
