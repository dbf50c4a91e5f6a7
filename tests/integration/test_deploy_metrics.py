"""The metric names the services export, derived from their source, for the deploy checks.

Dashboards and alert rules must only query series that exist. The exported set is not a
hand-kept list: :func:`exported_metrics` reads every module under ``shared/`` and ``services/``,
finds the ``groundwatch_*`` names handed to prometheus_client (``Counter("groundwatch_x", …)``,
or names kept in a table inside a collector that builds ``*MetricFamily`` objects of one kind),
and expands them into the sample names Prometheus stores (counters ``_total``, histograms
``_bucket``/``_sum``/``_count``). The end-to-end test cross-checks the derivation against the
real ``/metrics`` of running services.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
METRIC_NAME = re.compile(r"groundwatch_[a-z0-9_]+")

#: prometheus_client classes (and their custom-collector families) by the kind they export.
KINDS = {
    "Counter": "counter",
    "Gauge": "gauge",
    "Histogram": "histogram",
    "Summary": "summary",
    "Info": "info",
    "Enum": "gauge",
    "CounterMetricFamily": "counter_family",
    "GaugeMetricFamily": "gauge",
    "HistogramMetricFamily": "histogram_family",
    "GaugeHistogramMetricFamily": "gauge_histogram_family",
    "SummaryMetricFamily": "summary_family",
    "InfoMetricFamily": "info",
}

#: Series Prometheus makes itself, usable in rules and dashboards beside the exported ones.
PROMETHEUS_SERIES = frozenset({"up", "ALERTS", "ALERTS_FOR_STATE"})


def sample_names(name: str, kind: str) -> set[str]:
    """The sample names one metric family appears under in Prometheus."""
    base = name.removesuffix("_total") if kind in ("counter", "counter_family") else name
    return {
        "counter": {f"{base}_total", f"{base}_created"},
        "counter_family": {f"{base}_total"},
        "gauge": {base},
        "histogram": {f"{base}_bucket", f"{base}_sum", f"{base}_count", f"{base}_created"},
        "histogram_family": {f"{base}_bucket", f"{base}_sum", f"{base}_count"},
        "gauge_histogram_family": {f"{base}_bucket", f"{base}_gsum", f"{base}_gcount"},
        "summary": {base, f"{base}_sum", f"{base}_count", f"{base}_created"},
        "summary_family": {base, f"{base}_sum", f"{base}_count"},
        "info": {f"{base}_info"},
    }[kind]


def _prometheus_aliases(tree: ast.Module) -> dict[str, str]:
    """Local names bound to prometheus_client metric classes (``collections.Counter`` is not one)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prometheus_client"):
            for alias in node.names:
                if alias.name in KINDS:
                    aliases[alias.asname or alias.name] = KINDS[alias.name]
    return aliases


def _call_kind(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Name):
        return aliases.get(func.id)
    if isinstance(func, ast.Attribute) and func.attr in KINDS:
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id == "prometheus_client":
            return KINDS[func.attr]
    return None


def metrics_in_source(source: str, where: str = "<source>") -> dict[str, str]:
    """``{metric name: kind}`` defined in one module's source.

    A name passed as the first argument of a metric constructor takes that constructor's kind.
    Any other ``groundwatch_*`` literal (a table of names a collector iterates) takes the kind
    built in its nearest enclosing function, else in its enclosing class; a literal outside
    any scope that builds metrics is not a metric name.
    """
    tree = ast.parse(source)
    aliases = _prometheus_aliases(tree)
    found: dict[str, str] = {}
    direct: set[int] = set()
    for node in ast.walk(tree):
        kind = _call_kind(node, aliases)
        if kind is None:
            continue
        assert isinstance(node, ast.Call)
        first = node.args[0] if node.args else None
        if (
            isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and METRIC_NAME.fullmatch(first.value)
        ):
            found[first.value] = kind
            direct.add(id(first))

    def kinds_in(scope: ast.AST) -> set[str]:
        return {k for n in ast.walk(scope) if (k := _call_kind(n, aliases))}

    def visit(node: ast.AST, function: ast.AST | None, cls: ast.AST | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node
        elif isinstance(node, ast.ClassDef):
            cls, function = node, None
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in direct
            and METRIC_NAME.fullmatch(node.value)
        ):
            kinds = (kinds_in(function) if function is not None else set()) or (
                kinds_in(cls) if cls is not None else set()
            )
            if len(kinds) > 1:
                raise AssertionError(
                    f"{where}: cannot tell the kind of {node.value!r} (its scope builds {sorted(kinds)}); "
                    "pass the name to the metric constructor directly"
                )
            if kinds:
                found.setdefault(node.value, next(iter(kinds)))
        for child in ast.iter_child_nodes(node):
            visit(child, function, cls)

    visit(tree, None, None)
    return found


def source_files() -> Iterator[Path]:
    for top in ("shared", "services"):
        yield from sorted((ROOT / top).rglob("*.py"))


def exported_metric_kinds(files: Iterable[Path] | None = None) -> dict[str, str]:
    """``{metric name: kind}`` over every module of the services and the library."""
    out: dict[str, str] = {}
    for path in files if files is not None else source_files():
        text = path.read_text()
        if "groundwatch_" not in text:
            continue
        out.update(
            metrics_in_source(
                text, str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
            )
        )
    return out


def exported_metrics(files: Iterable[Path] | None = None) -> set[str]:
    """Every sample name the services can expose (what a PromQL selector may name)."""
    names: set[str] = set()
    for name, kind in exported_metric_kinds(files).items():
        names |= sample_names(name, kind)
    return names


def _strip_strings(expr: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def metric_names_in(expr: str) -> set[str]:
    """Metric and recording-rule names a PromQL expression selects (``groundwatch*``, ``up``, ``ALERTS``)."""
    text = re.sub(r"\$\{?\w+\}?", " ", _strip_strings(expr))  # Grafana variables
    tokens = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text))
    return {t for t in tokens if t.startswith("groundwatch") or t in PROMETHEUS_SERIES}


# --- tests of the derivation itself -------------------------------------------------------------

SAMPLE = """
from collections import Counter as Bag
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

bag = Bag("groundwatch_not_a_metric")

class Loop:
    def __init__(self, registry):
        self.messages = Counter("groundwatch_messages_total", "doc", ["service"], registry=registry)
        self.done = Counter("groundwatch_done", "doc", registry=registry)
        self.lag = Gauge("groundwatch_lag", "doc", registry=registry)
        self.seconds = Histogram("groundwatch_step_seconds", "doc", registry=registry)

class Spend:
    FIELDS = {"calls": ("groundwatch_calls", "doc"), "hits": ("groundwatch_hits", "doc")}
    def collect(self):
        for name, doc in self.FIELDS.values():
            yield CounterMetricFamily(name, doc)

def tallies():
    names = {"a": "groundwatch_accuracy"}
    for n in names.values():
        yield GaugeMetricFamily(n, "doc")

LOG_NAME = "groundwatch_logger"
"""


def test_derivation_reads_constructors_tables_and_kinds() -> None:
    kinds = metrics_in_source(SAMPLE)
    assert kinds == {
        "groundwatch_messages_total": "counter",
        "groundwatch_done": "counter",
        "groundwatch_lag": "gauge",
        "groundwatch_step_seconds": "histogram",
        "groundwatch_calls": "counter_family",
        "groundwatch_hits": "counter_family",
        "groundwatch_accuracy": "gauge",
    }


def test_sample_names_follow_the_exposition_format() -> None:
    assert sample_names("groundwatch_messages_total", "counter") == {
        "groundwatch_messages_total",
        "groundwatch_messages_created",
    }
    assert sample_names("groundwatch_calls", "counter_family") == {"groundwatch_calls_total"}
    assert "groundwatch_step_seconds_bucket" in sample_names(
        "groundwatch_step_seconds", "histogram"
    )
    assert sample_names("groundwatch_lag", "gauge") == {"groundwatch_lag"}


def test_ambiguous_table_is_an_error_not_a_guess() -> None:
    source = (
        "from prometheus_client import Counter, Gauge\n"
        "def make(r):\n"
        "    names = ['groundwatch_x']\n"
        "    Counter(names[0], 'd', registry=r)\n"
        "    Gauge('groundwatch_y', 'd', registry=r)\n"
    )
    with pytest.raises(AssertionError, match="cannot tell the kind"):
        metrics_in_source(source)


def test_promql_names_ignore_label_values_and_grafana_variables() -> None:
    expr = (
        'sum by (target) (rate(groundwatch_judgements_total{verdict="groundwatch_fake"}[$__rate_interval]))'
        " / groundwatch:groups:decided * $prompt_usd_per_mtok + on() up"
    )
    assert metric_names_in(expr) == {
        "groundwatch_judgements_total",
        "groundwatch:groups:decided",
        "up",
    }


def test_the_services_export_the_loop_and_tally_families() -> None:
    kinds = exported_metric_kinds()
    # Derived from the source; the families every deployment relies on must be among them.
    assert kinds.get("groundwatch_groups") == "gauge"
    assert kinds.get("groundwatch_messages_total") == "counter"
    assert kinds.get("groundwatch_judgements") == "counter"
    assert {
        "groundwatch_judgements_total",
        "groundwatch_probe_to_tally_seconds_bucket",
    } <= exported_metrics()
