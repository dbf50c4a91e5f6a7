"""The view's pages over the stored runs: per-target trends across a series' cycles and the
comparison of two runs (what ``groundwatch diff`` gives).

The numbers come from the service layer through :class:`RunPages` (the view's routes cannot
reach it: it sits above them), each run's from its own judgements, as ``diff`` reads a run;
the trends' chart is drawn by pygal as an SVG in the page (no script, readable as a table too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from fastapi import HTTPException

from groundwatch.core.compare import Comparison
from groundwatch.errors import GroundwatchError

#: Changed groups a comparison page lists (the count says how many there are).
SHOWN_CHANGES = 200
#: Runs the trends read, newest first.
TREND_RUNS = 30


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One (target, cohort) in one run: GRAMMAR's numbers from that run's own judgements."""

    run_id: str
    cycle: int
    target: str
    cohort: str
    groups: int
    acc_db: float | None
    gap_groups: int
    non_robust_groups: int
    coverage: float | None
    undecided_share: float | None


@dataclass(frozen=True, slots=True)
class RunRef:
    run_id: str
    series: str
    cycle: int
    status: str


class RunPages(Protocol):
    """What the trends and comparison pages read (the service layer's)."""

    def runs(self, series: str | None) -> tuple[str, list[RunRef]]:
        """(series, its runs newest first): ``series``, else the latest probed one."""
        ...

    def trends(self, series: str, runs: Sequence[RunRef]) -> list[TrendPoint]: ...

    def compare(self, a: str, b: str) -> Comparison: ...


def trends_context(pages: RunPages, series: str, target: str) -> dict[str, Any]:
    """The trends page's context (blocking: run in a thread)."""
    name, runs = _runs(pages, series)
    points = pages.trends(name, runs[:TREND_RUNS]) if runs else []
    targets = sorted({p.target for p in points})
    if target and target not in targets:
        raise HTTPException(
            400, f"no target {target!r} (there are: {', '.join(targets) or 'none'})"
        )
    shown = [p for p in points if not target or p.target == target]
    shown.sort(key=lambda p: (p.target, p.cohort, p.cycle))
    return {
        "series": name,
        "target": target,
        "targets": targets,
        "points": shown,
        "chart": _chart(shown) if shown else "",
        "runs": runs,
    }


def compare_context(pages: RunPages, series: str, a: str, b: str) -> dict[str, Any]:
    """The comparison page's context: the two runs' ``diff`` (default: the series' last two)."""
    from groundwatch.report.compare_view import comparison_section

    name, runs = _runs(pages, series)
    if not a and not b:
        if len(runs) < 2:
            return {"series": name, "runs": runs, "a": "", "b": "", "section": "", "more": 0}
        a, b = runs[1].run_id, runs[0].run_id
    if not a or not b:
        raise HTTPException(400, "say both runs: a (before) and b (after)")
    for side in (a, b):
        if len(side) > 200:
            raise HTTPException(400, "a run is named in at most 200 characters")
    try:
        comparison = pages.compare(a, b)
    except GroundwatchError as exc:
        raise HTTPException(400, str(exc).splitlines()[0]) from None
    more = max(0, len(comparison.changes) - SHOWN_CHANGES)
    shown: Comparison = replace(comparison, changes=comparison.changes[:SHOWN_CHANGES])
    return {
        "series": name,
        "runs": runs,
        "a": a,
        "b": b,
        "section": comparison_section(shown, level=2),
        "more": more,
    }


def _runs(pages: RunPages, series: str) -> tuple[str, list[RunRef]]:
    if len(series) > 128:
        raise HTTPException(400, "a series is named in at most 128 characters")
    try:
        return pages.runs(series or None)
    except GroundwatchError as exc:
        raise HTTPException(404, str(exc).splitlines()[0]) from None


def _chart(points: Sequence[TrendPoint]) -> str:
    """Acc_db of each (target, cohort) over the cycles, as an inline SVG."""
    import sys

    import pygal
    from pygal.style import Style

    # pygal puts an import hook for its map plugins (unused here) on sys.meta_path, one
    # without find_spec: every later import in the process then warns (an error under -W)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, pygal.PluginImportFixer)]

    cycles = sorted({p.cycle for p in points})
    chart = pygal.Line(
        width=900,
        height=300,
        range=(0, 1),
        show_dots=True,
        x_title="cycle",
        y_title="Acc_db",
        disable_xml_declaration=True,
        js=[],  # no script from a CDN: the SVG alone, its values in the table below
        style=Style(background="transparent", plot_background="transparent"),
        legend_at_bottom=True,
        truncate_legend=-1,
    )
    chart.x_labels = [str(c) for c in cycles]
    lines: dict[tuple[str, str], dict[int, float | None]] = {}
    for p in points:
        lines.setdefault((p.target, p.cohort), {})[p.cycle] = p.acc_db
    for (target, cohort), by_cycle in sorted(lines.items()):
        chart.add(f"{target} · {cohort}", [by_cycle.get(c) for c in cycles])
    svg: Any = chart.render(is_unicode=True)
    return str(svg)


RunPagesFor = Callable[[Any], RunPages]
"""The run pages over a store's engine (what a service passes the view)."""
