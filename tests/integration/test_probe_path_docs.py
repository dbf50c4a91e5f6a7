"""docs/architecture.md's hop count is the one scripts/probe_path.py counts: a change that adds or
removes a file on a probe's path changes the figure with it (``python scripts/probe_path.py
--docs`` writes it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "probe_path.py"


def probe_path() -> ModuleType:
    spec = importlib.util.spec_from_file_location("probe_path", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["probe_path"] = module  # the run's callable target is probe_path:answer
    spec.loader.exec_module(module)
    return module


def test_the_documented_hops_are_the_counted_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_SEMANTIC_METRICS", "off")
    script = probe_path()
    groups, stops = script.measure()
    assert groups > 0 and stops[-1] == script.GAUGE  # the path reached the gauge
    documented = script.documented(script.DOC.read_text())
    assert documented == script.doc_block(stops), "run: python scripts/probe_path.py --docs"


def test_a_path_is_counted_in_hops_and_reversals() -> None:
    script = probe_path()
    # core (0) → adapters (2) → stages (3) goes up the layers without a turn; back to core turns
    stops = [
        "groundwatch.core.a",
        "groundwatch.adapters.b",
        "groundwatch.stages.c",
        "groundwatch.core.d",
    ]
    assert script.figures(stops) == (3, 1)
    assert script.figures(stops[:1]) == (0, 0)
