"""docs/architecture.md's hop count and table of a probe's path are the ones scripts/probe_path.py
counts: a change that adds or removes a file on the path changes the figures and the table with it
(``python scripts/probe_path.py --docs`` writes them)."""

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
    text = script.DOC.read_text()
    assert script.documented(text) == script.doc_block(stops), (
        "run: python scripts/probe_path.py --docs"
    )
    table = script.documented(text, script.TABLE_BEGIN, script.TABLE_END)
    assert table == script.table_block(text, stops), "run: python scripts/probe_path.py --docs"
    assert [m for step in script.steps(stops) for m in step] == stops  # the table is all the path


def test_the_table_is_cut_where_each_step_opens() -> None:
    script = probe_path()
    path = [
        script.STEPS[0][0],
        "x.a",
        *[m for opening in script.STEPS[1:] for m in (*opening, "x.b")],
    ]
    cut = script.steps(path)
    assert len(cut) == len(script.STEPS)
    assert all(tuple(step[: len(o)]) == o for step, o in zip(cut, script.STEPS, strict=True))
    with pytest.raises(ValueError, match="step 2 opens at"):
        script.steps([script.STEPS[0][0], "x.a"])


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
