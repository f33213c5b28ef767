"""The Grafana dashboard in ``docs/dashboards/gateway.json``: importable JSON whose every
query names metrics the gateway really exports at ``/metrics``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway import create_app, parse_config

from .fake_upstream import FakeUpstream, Reply
from .mcp_server import McpServer
from .servers import serve
from .test_tracing import ERROR, WIRES, wire_config

pytestmark = [pytest.mark.api]

DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "dashboards" / "gateway.json"
METRIC = re.compile(r"\b(gateway_[a-z_]+)\b")
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def queries(dashboard: dict[str, Any]) -> list[str]:
    return [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]


def test_the_dashboard_is_importable_json_with_a_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert {"project", "model"} <= set(variables)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}"
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


def test_every_metric_the_dashboard_queries_is_exported(
    fake_upstream: tuple[FakeUpstream, str], tmp_path: Path, dice: McpServer
) -> None:
    fake, url = fake_upstream
    urls = {"openai": url, "anthropic": url}
    config = parse_config(wire_config(WIRES[0], urls, tmp_path / "s.db", dice, None), env={})
    with serve(create_app(config)) as gateway:
        fake.script(Reply(status=503, error_body=ERROR), Reply(status=502, error_body=ERROR))
        body = {"model": "primary", "input": "hi", "stream": True}
        with httpx.stream("POST", f"{gateway}/v1/responses", json=body) as answer:
            assert answer.status_code == 200 and list(answer.iter_lines())
        first = httpx.post(f"{gateway}/v1/responses", json={"model": "primary", "input": "hi"})
        chained = {"model": "primary", "input": "more", "previous_response_id": first.json()["id"]}
        assert httpx.post(f"{gateway}/v1/responses", json=chained).status_code == 200
        exposition = httpx.get(f"{gateway}/metrics").text
    families = list(text_string_to_metric_families(exposition))
    declared = {family.name for family in families}
    sampled = {sample.name for family in families for sample in family.samples}
    named = {
        name
        for query in queries(json.loads(DASHBOARD.read_text()))
        for name in METRIC.findall(query)
    }
    assert len(named) >= 15
    unknown = []
    for name in sorted(named):
        base = next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)
        if name not in sampled and base not in declared:
            unknown.append(name)
    assert not unknown, f"the dashboard queries metrics /metrics does not export: {unknown}"
    # The new ones count what they say.
    turns = {
        sample.labels["status"]: sample.value
        for family in families
        for sample in family.samples
        if sample.name == "gateway_turns_total"
    }
    assert turns == {"completed": 3.0}
    pools = [s for f in families for s in f.samples if s.name == "gateway_upstream_connections_max"]
    assert {s.labels["provider"] for s in pools} == {"east", "west"}
