"""The upstream connection pools as gauges read when ``/metrics`` is scraped: nothing is
counted on the request path. Each process reports its own (with ``server.workers`` the
shared exposition leaves them out)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..upstream import ProviderClient


class PoolCollector(Collector):
    """``gateway_upstream_connections_in_use`` and ``_max``, by provider."""

    def __init__(self, clients: Mapping[str, ProviderClient]) -> None:
        self._clients = clients

    def collect(self) -> Iterator[GaugeMetricFamily]:
        in_use = GaugeMetricFamily(
            "gateway_upstream_connections_in_use",
            "Upstream connection slots taken now (of max_connections), by provider.",
            labels=["provider"],
        )
        most = GaugeMetricFamily(
            "gateway_upstream_connections_max",
            "Each provider's max_connections.",
            labels=["provider"],
        )
        for name, client in self._clients.items():
            in_use.add_metric([name], client.connections_in_use())
            most.add_metric([name], client.settings.max_connections)
        yield in_use
        yield most
