"""Grafana provisioning and dashboards: well-formed, wired to the provisioned datasource, and
every panel query valid PromQL that selects only series the services export (or the recording
rules produce). Validity is checked by a real Prometheus (scripts/prometheus.sh)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.procs import free_port
from tests.integration.test_deploy_metrics import exported_metrics, metric_names_in
from tests.integration.test_deploy_prometheus import ThrowawayPrometheus, rules

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
BUILTIN_VARIABLES = {"__rate_interval", "__range", "__interval", "__range_s"}

#: What each area of issue 8's dashboard list must show, as the series a panel has to query.
REQUIRED_SERIES = {
    "gap / non-robust tallies per target and cohort": "groundwatch_groups",
    "accuracy": "groundwatch_accuracy",
    "R": "groundwatch_refined_accuracy",
    "λ": "groundwatch_lambda",
    "attribution": "groundwatch_failures",
    "judge throughput": "groundwatch_judge_verdicts_total",
    "lag": "groundwatch_consumer_lag",
    "LLM calls": "groundwatch_llm_calls_total",
    "cache hits": "groundwatch_llm_cache_hits_total",
    "cost": "groundwatch_llm_prompt_tokens_total",
}


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, expr) of every panel target and annotation query."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for annotation in dashboard["annotations"]["list"]:
        if "expr" in annotation:
            yield f"annotation {annotation['name']}", annotation["expr"]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
            assert inner, f"variable {var['name']}: unsupported query {query!r}"
            yield f"variable {var['name']}", inner.group(1)


@pytest.fixture(params=DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def dashboard(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(request.param)


def provisioned_datasource() -> dict[str, Any]:
    config = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    )
    (source,) = config["datasources"]
    assert isinstance(source, dict)
    return source


@pytest.mark.unit
def test_provisioning_points_at_the_compose_mounts() -> None:
    source = provisioned_datasource()
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    providers = yaml.safe_load(
        (GRAFANA / "provisioning" / "dashboards" / "groundwatch.yml").read_text()
    )
    (provider,) = providers["providers"]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    mounts = compose["services"]["grafana"]["volumes"]
    assert f"./deploy/grafana/dashboards:{provider['options']['path']}:ro" in mounts
    assert "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro" in mounts
    assert len({load(p)["uid"] for p in DASHBOARDS}) == len(DASHBOARDS) >= 2


@pytest.mark.unit
def test_dashboard_is_well_formed(dashboard: dict[str, Any]) -> None:
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds_var = variables["datasource"]
    assert ds_var["type"] == "datasource"
    assert ds_var["current"]["value"] == provisioned_datasource()["uid"]
    cells: set[tuple[int, int]] = set()
    for panel in panels(dashboard):
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps another panel"
                cells.add((x, y))
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], f"{panel['title']} has no query"
        assert panel.get("description"), f"{panel['title']} has no description"
    for title, expr in queries(dashboard):
        for name in re.findall(r"\$\{?(\w+)\}?", expr):
            assert name in variables or name in BUILTIN_VARIABLES, (
                f"{title}: undefined variable ${name}"
            )


@pytest.mark.unit
def test_panels_query_only_exported_metrics(dashboard: dict[str, Any]) -> None:
    exported = exported_metrics()
    recorded = {r["record"] for r in rules() if "record" in r}
    unknown = {}
    for title, expr in queries(dashboard):
        names = metric_names_in(expr)
        assert names, f"{title}: {expr!r} selects no metric"
        missing = {
            n
            for n in names
            if (n.startswith("groundwatch_") and n not in exported)
            or (":" in n and n not in recorded)
        }
        if missing:
            unknown[title] = missing
    assert unknown == {}, f"panels query series no service exports: {unknown}"


@pytest.mark.unit
def test_dashboards_cover_the_issue_list() -> None:
    selected: set[str] = set()
    for path in DASHBOARDS:
        for _, expr in queries(load(path)):
            selected |= metric_names_in(expr)
    missing = {area: series for area, series in REQUIRED_SERIES.items() if series not in selected}
    assert missing == {}


def substitute(expr: str, dashboard: dict[str, Any]) -> str:
    """The query as Grafana would send it, with variables at their defaults and 'All' as .*."""
    values = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h", "__range_s": "3600"}
    for var in dashboard["templating"]["list"]:
        if var["type"] == "textbox":
            values[var["name"]] = var["query"]
        elif var.get("includeAll"):
            values[var["name"]] = var.get("allValue", ".*")
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)


@pytest.mark.integration
def test_every_query_is_valid_promql(tmp_path: Path) -> None:
    """A real Prometheus parses every panel, annotation and variable query (no scrape needed)."""
    config = tmp_path / "prometheus.yml"
    rule_files = [str(p) for p in sorted((ROOT / "deploy" / "prometheus" / "rules").glob("*.yml"))]
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"evaluation_interval": "1m"},
                "rule_files": rule_files,
                "scrape_configs": [],
            }
        )
    )
    server = ThrowawayPrometheus(config, free_port()).start()
    try:
        checked = 0
        for path in DASHBOARDS:
            dash = load(path)
            for title, expr in queries(dash):
                try:
                    server.api("query", query=substitute(expr, dash))
                except AssertionError as exc:
                    pytest.fail(f"{path.name} / {title}: {exc}")
                checked += 1
        assert checked >= 30
        loaded = {r["name"] for g in server.api("rules")["groups"] for r in g["rules"]}
        assert loaded == {r.get("alert") or r["record"] for r in rules()}
    finally:
        server.stop()
