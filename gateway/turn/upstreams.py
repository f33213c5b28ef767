"""Which upstream answers a model's turns: its route, its adapter for one deployment and
key, metered, and, for a model with several deployments, keys, retries or fallbacks, the
routed upstream that tries them in turn (:mod:`gateway.upstream.routing.routed`)."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Mapping

from session import Item, SessionError
from session.shared import SharedLimits

from ..config import GatewayConfig, Route
from ..config_sections import ProviderSettings
from ..errors import not_found
from ..observability.attempt_spans import AttemptTarget
from ..observability.metered import MeteredUpstream
from ..observability.metrics import Metrics
from ..routing_settings import RetrySettings
from ..sealing import Sealer
from ..tracing import NO_TRACER, Tracer, routing_event
from ..upstream import ProviderClient, ReasoningState, Upstream, build_upstream
from ..upstream.routing.affinity import Sticky, TurnAffinity, preferred, route_target, shared_name
from ..upstream.routing.bound_items import bound_origin, origin_of
from ..upstream.routing.cooldowns import Cooldowns
from ..upstream.routing.prices import Price, price_of
from ..upstream.routing.routed import Candidate, RoutedUpstream, plan

logger = logging.getLogger(__name__)


UNLISTED_PRICES = 1024  # prices kept of names only default_provider routes


class Upstreams:
    """Makes the upstream of each turn from the configuration, the providers' HTTP
    clients and the cooldowns every instance shares."""

    def __init__(
        self,
        config: GatewayConfig,
        clients: Mapping[str, ProviderClient],
        metrics: Metrics,
        sealer: Sealer,
        shared: SharedLimits,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self.tracer = tracer
        self.config = config
        self.metrics = metrics
        self.sealer = sealer
        self.shared = shared
        self.cooldowns = Cooldowns(config.routing.cooldown, shared)
        self._clients = clients
        self._rng = random.Random()
        # How each listed model's deployments are priced, looked up once (the library's
        # price list takes a moment to load: at start-up, not on a turn).
        self._prices: dict[tuple[str, str], Price | None] = {
            (name, route.deployment): price_of(route.provider, route.upstream_model, listed.pricing)
            for name, listed in config.models.items()
            for route in config.routes(name)
        }
        # Names only ``default_provider`` routes are chosen by clients: their prices are
        # kept for the most recent few, not for every name ever sent.
        self._unlisted_prices: OrderedDict[tuple[str, str], Price | None] = OrderedDict()

    def route(self, model: str) -> Route:
        """Where ``model`` goes; a 404 ``model_not_found`` if nothing routes it."""
        route = self.config.route(model)
        if route is None:
            raise not_found(
                f"The model '{model}' does not exist or is not routed by this gateway.",
                param="model",
                code="model_not_found",
            )
        return route

    def providers(self, model: str) -> list[ProviderSettings]:
        """Every provider a turn of ``model`` may reach: its deployments', then its
        fallbacks' (and theirs), each once."""
        found: list[ProviderSettings] = []
        for name in self.config.fallback_order(model, context_window=True):
            found += [r.provider for r in self.config.routes(name) if r.provider not in found]
        return found

    def _attempt(
        self, candidate: Candidate, project: str, *, only: bool = False
    ) -> MeteredUpstream:
        route = candidate.route
        client = self._clients.get(route.provider_name)
        if client is not None and candidate.key is not None:
            client = client.with_key(candidate.key.key)
        state = ReasoningState(self.sealer, project, self._origin(candidate))
        inner = build_upstream(route, client, state)
        key_name = candidate.key_name if candidate.key is not None else None
        target = None
        if self.tracer.enabled:
            target = AttemptTarget.of(self.tracer, route, candidate.key_name)
        return MeteredUpstream(
            inner,
            self.metrics,
            route.provider_name,
            candidate.model,
            project,
            route.deployment,
            self._price(candidate.model, route),
            key_name,
            attempt=only,
            target=target,
        )

    async def sticky(
        self,
        model: str,
        project: str,
        items: list[Item],
        parent_route: Item | None,
        conversation: str | None,
        cache_key: str | None,
        continued: tuple[str | None, str] | None = None,
    ) -> Sticky:
        """Where a turn of ``model`` would rather go (see :mod:`gateway.upstream.routing.affinity`):
        nowhere in particular for a model with one deployment and key.

        ``continued`` (the previous response's id, if any, and this one's) is for a turn
        whose history the caller holds (a WebSocket's): no stored parent is read, so each
        such turn keeps its place in the shared limits for the next."""
        if self._single(model):
            return Sticky()
        origin = bound_origin(self.sealer, project, items)
        if not self.config.routing.affinity:
            return Sticky(origin=origin)
        names = []
        if conversation is not None:
            names.append(shared_name("conversation", project, conversation))
        if cache_key is not None:
            names.append(shared_name("prompt_cache_key", project, cache_key, model))
        target = route_target(parent_route)
        if parent_route is not None:
            return Sticky("chain", target, tuple(names), origin)
        lookups = list(names)
        if continued is not None:
            if continued[0] is not None:
                lookups.insert(0, shared_name("response", project, continued[0]))
            names.append(shared_name("response", project, continued[1]))
        for name in lookups:
            try:
                target = await self.shared.affinity(name, time.time())
            except SessionError as error:  # routed as if unknown
                logger.warning("an affinity could not be read: %s", error.message)
            if target is not None:
                break
        source = "conversation" if conversation is not None else "prompt_cache_key"
        if continued is not None and continued[0] is not None:
            source = "chain"
        elif conversation is None and cache_key is None:
            source = ""  # a first turn: its place is kept, it has none to keep to
        return Sticky(source, target, tuple(names), origin)

    def _single(self, model: str) -> bool:
        """Whether ``model`` has one deployment, one key and no fallbacks."""
        routes = self.config.routes(model)
        listed = self.config.models.get(model)
        return (
            len(routes) == 1
            and len(routes[0].provider.api_keys) <= 1
            and not (listed is not None and (listed.fallbacks or listed.context_window_fallbacks))
        )

    def routed(self, model: str, project: str, sticky: Sticky | None = None) -> Upstream:
        """What answers ``model``'s turns: its deployments and keys, tried in turn (the
        ``sticky`` target and the bound items' origin first), then its fallbacks (see
        :mod:`gateway.upstream.routing.routed`); a model with one of each and no retries is just
        its adapter."""
        plans = plan(self.config, model, self.cooldowns, self._rng)
        affinity = None
        if sticky is not None and (sticky.source or sticky.names or sticky.origin):
            plans, reason = preferred(plans, sticky, self.cooldowns, self._origin)
            affinity = TurnAffinity(
                sticky,
                reason,
                self.shared,
                self.config.routing.affinity_idle_seconds,
                self._observe_affinity,
            )
        listed = self.config.models.get(model)
        larger = listed.context_window_fallbacks if listed is not None else []
        retries = self._retries(model).attempts
        if len(plans) == 1 and len(plans[0]) == 1 and retries in (None, 1) and not larger:
            only = plans[0][0]
            if only.key is None or only.key.requests_per_minute is None:
                return self._attempt(only, project, only=True)
        context_plans = [
            p for name in larger for p in plan(self.config, name, self.cooldowns, self._rng)[:1]
        ]
        return RoutedUpstream(
            plans,
            context_plans,
            functools.partial(self._attempt, project=project),
            self.cooldowns,
            self._retries,
            self._observe_routing,
            self._key_rate,
            affinity=affinity,
        )

    @staticmethod
    def _origin(candidate: Candidate) -> str:
        return origin_of(candidate.route, candidate.key.key if candidate.key else None)

    def _observe_affinity(self, source: str, outcome: str, model: str) -> None:
        self.metrics.affinity.labels(self.metrics.model_label(model), source, outcome).inc()

    def _price(self, model: str, route: Route) -> Price | None:
        """How a deployment's turns are priced: a listed model's as looked up at start, a
        name only ``default_provider`` routes looked up once while it is among the
        ``UNLISTED_PRICES`` names used last."""
        key = (model, route.deployment)
        if key in self._prices:
            return self._prices[key]
        if key in self._unlisted_prices:
            self._unlisted_prices.move_to_end(key)
            return self._unlisted_prices[key]
        price = self._unlisted_prices[key] = price_of(route.provider, route.upstream_model, None)
        if len(self._unlisted_prices) > UNLISTED_PRICES:
            self._unlisted_prices.popitem(last=False)
        return price

    async def _key_rate(self, candidate: Candidate) -> float:
        """Take a call from the candidate key's shared bucket (see routing)."""
        key = candidate.key
        if key is None or key.requests_per_minute is None:
            return 0.0
        name = f"upstream:{candidate.key_name}"
        return await self.shared.take_request(name, key.requests_per_minute, time.time())

    def _retries(self, model: str) -> RetrySettings:
        listed = self.config.models.get(model)
        return listed.retry if listed is not None else RetrySettings()

    def _observe_routing(self, event: str, candidate: Candidate, detail: str) -> None:
        label = self.metrics.model_label(candidate.model)
        provider = candidate.route.provider_name
        if self.tracer.enabled:
            routing_event(event, candidate.route.deployment, candidate.key_name, detail)
        if event == "retry":
            self.metrics.upstream_retries.labels(provider, detail).inc()
            return
        if event in ("answered", "failed"):
            outcome = detail if event == "failed" else event  # as the turn's route records it
            self.metrics.upstream_attempts.labels(provider, label, outcome).inc()
        self.metrics.routing_events.labels(label, candidate.route.deployment, event).inc()
        if event == "fallback":
            logger.warning("falling back to model %s: %s", candidate.model, detail)
