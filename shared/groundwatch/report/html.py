"""The group report as one self-contained HTML page with inline SVG plots.

No script, stylesheet or font from a network: the page is mailed, archived and opened on an
air-gapped laptop, so everything it shows is in the file. Plots: group status per cohort, accuracy
against R (with Acc_db and the retrieval numbers), the cohort comparison with 95 % intervals, and
failure attribution; tables carry the exact numbers behind each plot. The failing-facts table
(every failing semantic group with its SQL, gold answer and each form's question, answer and
verdict) is sorted, filtered and expanded by a small inline script; without scripts every row
and its forms are simply shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from groundwatch.core.tagging import CAUSE_MEANINGS
from groundwatch.report.columns import (
    CAUSE_COLOURS,
    COHORT_COLUMNS,
    DENOMINATOR_COLUMNS,
    SCENARIO_COLUMNS,
    STATUS_SEGMENTS,
    answer_metric_columns,
    fmt,
    interval,
    table3_rows,
)
from groundwatch.report.document import (
    CohortNumbers,
    GroupResult,
    Hypothesis,
    Report,
    ScoresReport,
    TargetReport,
)

Ci = tuple[float, float] | None
#: (label, colour, value, interval) of each bar of the accuracy plot.
METRIC_BARS: tuple[
    tuple[str, str, Callable[[CohortNumbers], float | None], Callable[[CohortNumbers], Ci]], ...
] = (
    ("Acc", "#34495e", lambda c: c.accuracy, lambda c: c.accuracy_ci),
    ("R", "#16a085", lambda c: c.refined_accuracy, lambda c: c.refined_accuracy_ci),
    ("Acc_db", "#c0392b", lambda c: c.acc_db, lambda c: None),
    ("Retrieval acc", "#8e44ad", lambda c: c.retrieval_accuracy, lambda c: None),
    ("Retrieval R", "#b084cc", lambda c: c.refined_retrieval_accuracy, lambda c: None),
)

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem;
color:#222;max-width:1100px}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}.wide{overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
th{background:#f4f6f7}.warn{color:#a04000}.ok{color:#1e8449}.bad{color:#a93226}
svg{display:block;margin:.5rem 0}svg text{font-family:inherit}.muted{color:#777;font-size:.85rem}
table.ff td,table.ff th{text-align:left;vertical-align:top}table.ff th{cursor:pointer}
table.ff th[aria-sort=ascending]::after{content:" ▲"}
table.ff th[aria-sort=descending]::after{content:" ▼"}
tr.ff-detail>td{background:#fbfcfc}tr.ff-detail.collapsed{display:none}
table.ff table td,table.ff table th{font-size:.8rem;cursor:auto}
.st-gap{color:#a93226;font-weight:bold}.st-non_robust{color:#b9770e}.st-flaky{color:#9a7d0a}
.st-unknown{color:#566573}.ff-controls{margin:.5rem 0}.ff-controls input{width:20rem}
button.ff-toggle{border:0;background:none;cursor:pointer;font-size:.9rem;padding:0 .3rem}
code{font-size:.85rem;background:#f4f6f7;padding:0 .2rem}
"""

#: Answer and question characters shown per form (the JSON report keeps them whole).
_HTML_TEXT = 600

_FF_SCRIPT = """
(function () {
  var table = document.getElementById("failing-facts");
  if (!table) { return; }
  var body = table.tBodies[0];
  var pairs = [];
  var rows = body.querySelectorAll("tr.ff-row");
  for (var i = 0; i < rows.length; i++) {
    var detail = rows[i].nextElementSibling;
    pairs.push({row: rows[i], detail: detail});
    detail.classList.add("collapsed");
  }
  var filter = document.getElementById("ff-filter");
  var status = document.getElementById("ff-status");
  var count = document.getElementById("ff-count");
  function apply() {
    var q = filter.value.trim().toLowerCase();
    var st = status.value;
    var shown = 0;
    pairs.forEach(function (p) {
      var text = (p.row.textContent + " " + p.detail.textContent).toLowerCase();
      var ok = (!st || p.row.getAttribute("data-status") === st) && (!q || text.indexOf(q) >= 0);
      p.row.hidden = !ok;
      p.detail.hidden = !ok;
      if (ok) { shown++; }
    });
    count.textContent = shown + " of " + pairs.length + " groups";
  }
  filter.addEventListener("input", apply);
  status.addEventListener("change", apply);
  body.addEventListener("click", function (ev) {
    var button = ev.target.closest("button.ff-toggle");
    if (!button) { return; }
    var detail = button.closest("tr").nextElementSibling;
    var open = detail.classList.toggle("collapsed") === false;
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.textContent = open ? "▾" : "▸";
  });
  var heads = table.tHead.rows[0].cells;
  for (var c = 0; c < heads.length; c++) {
    heads[c].addEventListener("click", (function (col) {
      return function () {
        var th = heads[col];
        var asc = th.getAttribute("aria-sort") !== "ascending";
        for (var k = 0; k < heads.length; k++) { heads[k].removeAttribute("aria-sort"); }
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var numeric = th.getAttribute("data-type") === "number";
        pairs.sort(function (a, b) {
          var x = a.row.cells[col].getAttribute("data-v");
          var y = b.row.cells[col].getAttribute("data-v");
          var d = numeric ? (parseFloat(x) - parseFloat(y)) : x.localeCompare(y);
          return asc ? d : -d;
        });
        pairs.forEach(function (p) { body.appendChild(p.row); body.appendChild(p.detail); });
      };
    })(c));
  }
  apply();
})();
"""


_fmt = fmt
_ci = interval


def _rows(report: Report) -> list[tuple[str, str, CohortNumbers]]:
    return [
        (target, cohort, c)
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
    ]


def _label(target: str, cohort: str, many_targets: bool) -> str:
    """The row's target and cohort: the target is named even when it is the only one (a report
    that leaves it out cannot say which endpoint it is about)."""
    del many_targets  # kept for the callers' symmetry with the text renderer
    return f"{target} · {cohort}"


def _monitoring_html(report: Report) -> str:
    """Where the series stands: its cycle and window, what is held, the regressions and
    recoveries per target · cohort, the trend of status changes per cycle and the latest
    transitions (the JSON's ``series``, ``latest_cycle``, ``transitions`` and the cohorts'
    counts, which the page used to leave out)."""
    if not report.series and not report.transitions:
        return ""
    window = (
        f"each group over its own last {report.window_runs} cycle(s) with a decided verdict"
        if report.window_runs
        else "every cycle pooled"
    )
    parts = [
        "<h2 id='monitoring'>Monitoring</h2>",
        "<p class='muted'>series "
        + escape(", ".join(report.series) or "–")
        + f" · latest cycle {escape(_fmt(report.latest_cycle))} · {escape(window)}</p>",
    ]
    rows = [
        [f"{t} · {c}", "", n.regressions, n.recoveries, n.held_groups, n.unknown_groups]
        for t, tr in report.targets.items()
        for c, n in tr.cohorts.items()
    ]
    parts.append(
        _table(
            ["target · cohort", "", "regressions", "recoveries", "held", "unknown"],
            rows,
            helps=[
                "",
                "",
                "→ gap from a status with right answers (the last conclusive one)",
                "gap → robust",
                "status kept through cycles without a decided verdict (an outage)",
                "too little decided for a status",
            ],
        )
    )
    if report.transitions:
        trend: dict[int, dict[str, int]] = {}
        for tr in report.transitions:
            per = trend.setdefault(tr.cycle, {"regression": 0, "recovery": 0, "change": 0})
            per[tr.kind] = per.get(tr.kind, 0) + 1
        parts.append("<h3>Trend: status changes per cycle (latest transitions)</h3>")
        parts.append(
            _table(
                ["cycle", "", "regressions", "recoveries", "other changes"],
                [
                    [c, "", v["regression"], v["recovery"], v["change"]]
                    for c, v in sorted(trend.items(), reverse=True)
                ],
            )
        )
        parts.append("<h3>Latest transitions</h3>")
        parts.append(
            _table(
                ["target · cohort", "", "group", "from", "to", "kind", "cycle"],
                [
                    [
                        f"{tr.target} · {tr.cohort}",
                        "",
                        tr.group_id,
                        tr.from_status,
                        tr.to_status,
                        tr.kind,
                        tr.cycle,
                    ]
                    for tr in report.transitions
                ],
            )
        )
    return "".join(parts)


def _text(
    x: float,
    y: float,
    s: str,
    *,
    anchor: str = "start",
    size: int = 12,
    fill: str = "#222",
    weight: str = "normal",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="{fill}" font-weight="{weight}">{escape(s)}</text>'
    )


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for label, colour in items:
        out.append(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" fill="{colour}"/>')
        out.append(_text(x + 16, y, label, size=11))
        x += 22 + 7 * len(label)
    return out


def _stacked(
    rows: Sequence[tuple[str, Sequence[tuple[str, int, str]]]], title: str, unit: str
) -> str:
    """Horizontal stacked bars, one per row; segments are (label, count, colour)."""
    label_w, bar_w, row_h = 170, 600, 28
    height = 40 + row_h * len(rows) + 20
    body = [_text(2, 14, title, weight="bold")]
    seen: dict[str, str] = {}
    for i, (label, segments) in enumerate(rows):
        y = 30 + i * row_h
        total = sum(n for _, n, _ in segments)
        body.append(_text(label_w - 8, y + 15, label, anchor="end"))
        x = float(label_w)
        for seg_label, n, colour in segments:
            seen.setdefault(seg_label, colour)
            if not n or not total:
                continue
            w = bar_w * n / total
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="20" fill="{colour}">'
                f"<title>{escape(f'{label}: {seg_label} {n}')}</title></rect>"
            )
            if w > 24:
                body.append(_text(x + w / 2, y + 14, str(n), anchor="middle", size=11, fill="#fff"))
            x += w
        body.append(_text(label_w + bar_w + 6, y + 15, f"{total} {unit}", size=11, fill="#555"))
    body += _legend(list(seen.items()), label_w, height - 6)
    return _svg(label_w + bar_w + 90, height, body, title)


def _status_plot(report: Report) -> str:
    many = len(report.targets) > 1
    rows = [
        (_label(t, c, many), [(name, get(n), col) for name, col, get in STATUS_SEGMENTS])
        for t, c, n in _rows(report)
    ]
    return _stacked(rows, "Semantic groups by status", "groups")


def _attribution_plot(report: Report) -> str:
    many = len(report.targets) > 1
    rows = [
        (
            _label(t, c, many),
            [(k, int(n.attribution.get(k, 0)), col) for k, col in CAUSE_COLOURS],
        )
        for t, c, n in _rows(report)
    ]
    return _stacked(rows, "Failure attribution (wrong or unanswered examples)", "failures")


def _metric_plot(report: Report) -> str:
    """Grouped bars on [0, 1]: accuracy, R (with Wilson intervals), Acc_db, retrieval numbers."""
    many = len(report.targets) > 1
    rows = _rows(report)
    left, top, plot_h = 40, 30, 220
    group_w = 26 * len(METRIC_BARS) + 30
    width = left + group_w * max(1, len(rows)) + 20
    height = top + plot_h + 70
    body = [_text(2, 14, "Accuracy vs refined accuracy R (95 % Wilson intervals)", weight="bold")]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        body.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e8e8"/>'
        )
        body.append(_text(left - 4, y + 4, f"{tick:.2f}", anchor="end", size=10, fill="#777"))
    for gi, (t, c, n) in enumerate(rows):
        gx = left + 10 + gi * group_w
        for mi, (name, colour, value, bounds) in enumerate(METRIC_BARS):
            v = value(n)
            x = gx + mi * 26
            if v is None:
                body.append(_text(x + 11, top + plot_h - 4, "–", anchor="middle", size=10))
                continue
            h = plot_h * float(v)
            body.append(
                f'<rect x="{x}" y="{top + plot_h - h:.1f}" width="22" height="{h:.1f}" '
                f'fill="{colour}"><title>{escape(f"{t} {c}: {name} = {v:.3f}")}</title></rect>'
            )
            ci = bounds(n)
            if ci:
                y_lo, y_hi = top + plot_h * (1 - ci[0]), top + plot_h * (1 - ci[1])
                body.append(
                    f'<line x1="{x + 11}" x2="{x + 11}" y1="{y_lo:.1f}" y2="{y_hi:.1f}" '
                    'stroke="#000" stroke-width="1.5"/>'
                    f'<line x1="{x + 6}" x2="{x + 16}" y1="{y_hi:.1f}" y2="{y_hi:.1f}" '
                    'stroke="#000"/>'
                    f'<line x1="{x + 6}" x2="{x + 16}" y1="{y_lo:.1f}" y2="{y_lo:.1f}" '
                    'stroke="#000"/>'
                )
        body.append(
            _text(gx + group_w / 2 - 15, top + plot_h + 16, _label(t, c, many), anchor="middle")
        )
    body += _legend([(name, colour) for name, colour, _, _ in METRIC_BARS], left, height - 10)
    return _svg(max(width, 620), height, body, "Accuracy vs refined accuracy")


def _interval_plot(h: Hypothesis) -> str:
    """Dot-and-whisker plot of both cohorts' accuracy and R over the compared groups."""
    a, b = h.cohorts
    items: list[tuple[str, float | None, Ci, str]] = []
    for metric in ("Acc", "R"):
        for cohort, colour in ((a, "#2471a3"), (b, "#cb4335")):
            side = h.sides[cohort]
            if metric == "Acc":
                items.append((f"{cohort} Acc", side.accuracy, side.accuracy_ci, colour))
            else:
                items.append(
                    (f"{cohort} R", side.refined_accuracy, side.refined_accuracy_ci, colour)
                )
    lows: list[float] = [float(ci[0]) for _, _, ci, _ in items if ci]
    lo = max(0.0, min([*lows, 0.9]) - 0.05)  # zoom on the interesting end, keep 1.0 in view
    label_w, plot_w, row_h = 130, 520, 26
    height = 50 + row_h * len(items) + 24

    def xpos(v: float) -> float:
        return label_w + plot_w * (v - lo) / (1 - lo)

    body = [
        _text(
            2,
            14,
            f"Cohort comparison: {a} vs {b} over {h.groups_compared} groups "
            f"(mutual gap groups left out), 95 % Wilson intervals",
            weight="bold",
        )
    ]
    for tick in [lo + (1 - lo) * k / 4 for k in range(5)]:
        x = xpos(tick)
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="28" y2="{height - 24}" stroke="#e5e8e8"/>'
        )
        body.append(_text(x, height - 10, f"{tick:.2f}", anchor="middle", size=10, fill="#777"))
    for i, (label, v, ci, colour) in enumerate(items):
        y = 44 + i * row_h
        body.append(_text(label_w - 8, y + 4, label, anchor="end"))
        if ci:
            body.append(
                f'<line x1="{xpos(ci[0]):.1f}" x2="{xpos(ci[1]):.1f}" y1="{y}" y2="{y}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        if v is not None:
            body.append(
                f'<circle cx="{xpos(v):.1f}" cy="{y}" r="5" fill="{colour}">'
                f"<title>{escape(f'{label} = {v:.3f} {_ci(ci)}')}</title></circle>"
            )
            body.append(_text(label_w + plot_w + 8, y + 4, f"{v:.3f} {_ci(ci)}", size=11))
    return _svg(label_w + plot_w + 150, height, body, "Cohort comparison")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], helps: Sequence[str] = ()) -> str:
    """A table in a horizontally scrolling box (a wide one never cuts its last columns); a
    column with neither a header nor a value in any row is left out."""
    tips = list(helps) or [""] * len(headers)
    keep = [i for i, h in enumerate(headers) if h or any(_fmt(r[i]) not in ("", "–") for r in rows)]
    head = "".join(
        f"<th title='{escape(tips[i])}'>{escape(headers[i])}</th>"
        if tips[i]
        else f"<th>{escape(headers[i])}</th>"
        for i in keep
    )
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_fmt(r[i]))}</td>" for i in keep) + "</tr>" for r in rows
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='wide'>{table}</div>"


def _hypothesis_html(target: str, h: Hypothesis) -> str:
    if not h.available:
        return f"<p class='muted'>Cohort test for {escape(target)}: {escape(h.reason or '')}</p>"
    a, b = h.cohorts
    pt, z, zr, es = h.paired_test, h.z_test, h.refined_z_test, h.effect_size
    assert pt is not None and z is not None and zr is not None and es is not None
    cls = "bad" if h.significant else "ok"
    parts = [
        f"<h3>{escape(target)}: {escape(a)} vs {escape(b)}</h3>",
        f"<p class='{cls}'><strong>{escape(h.conclusion or '')}</strong></p>",
        _interval_plot(h),
        _table(
            [
                "cohort",
                "",
                "examples",
                "correct",
                "Acc",
                "Acc 95% CI",
                "R",
                "R 95% CI",
                "λ (compared)",
                "λ (all groups)",
            ],
            [
                [
                    c,
                    "",
                    s.examples,
                    s.correct,
                    s.accuracy,
                    _ci(s.accuracy_ci),
                    s.refined_accuracy,
                    _ci(s.refined_accuracy_ci),
                    s.lambda_,
                    s.lambda_all_groups,
                ]
                for c, s in ((a, h.sides[a]), (b, h.sides[b]))
            ],
        ),
        _table(
            ["test", "", "statistic", "p-value", "effect size"],
            [
                [
                    "paired permutation (per-group accuracy)",
                    "",
                    pt.mean_difference,
                    pt.p_value,
                    f"rank-biserial {_fmt(pt.rank_biserial)}",
                ],
                [
                    "Wilcoxon signed-rank",
                    "",
                    pt.wilcoxon_statistic,
                    pt.wilcoxon_p,
                    f"{pt.n_nonzero} non-tied of {pt.n_pairs} groups",
                ],
                ["two-proportion z", "", z.z, z.p_value, f"Cohen's h {_fmt(es.cohens_h)}"],
                ["two-proportion z on R", "", zr.z, zr.p_value, ""],
            ],
        ),
        "<p class='muted'>"
        f"{h.shared_groups} shared groups, {h.mutual_gap_groups} mutual gap groups left out, "
        f"{h.pending_groups_left_out} pending left out; groups better in {escape(a)}: "
        f"{h.groups_better_in.get(a, 0)}, in {escape(b)}: {h.groups_better_in.get(b, 0)}.</p>",
    ]
    parts += [f"<p class='warn'>⚠ {escape(w)}</p>" for w in h.warnings]
    return "".join(parts)


def _table3_html(target: str, tr: TargetReport) -> str:
    """GRAMMAR 002 Table 3 for one target: each strategy's number with its n, and how the
    balanced numbers were drawn."""
    rows = table3_rows(tr)
    b = tr.balanced
    if not rows or b is None:
        return ""
    a, c = b.cohorts
    note = (
        f"balanced: {b.forms_per_group} forms per shared group, {b.groups} decided groups"
        f" ({b.mutual_gap_groups} mutual gap groups), {b.retrieval_groups} groups with retrieval"
        f" judgements, seed {b.seed}; λ "
        + " / ".join(f"{x} {_fmt(side.lambda_)}" for x, side in b.sides.items())
        if b.available
        else f"balanced: {b.reason}"
    )
    return (
        f"<h3>{escape(target)}</h3>"
        + _table(["retrieval database", "LLM", a, c], rows)
        + f"<p class='muted'>{escape(note)}</p>"
    )


def _data_quality_html(report: Report) -> str:
    """GRAMMAR 002 Appendix I: each cohort's gap groups by label, and every checked group."""
    dq = report.data_quality
    assert dq is not None
    many = len(report.targets) > 1
    labels = list(dq.labels)
    how = "BM25 over its sentences" + (", then an LLM reading the best documents" if dq.mrc else "")
    return "".join(
        [
            "<h2>Data quality of gap groups</h2>",
            f"<p class='muted'>Can the corpus ({dq.corpus_documents} documents; {escape(how)})"
            " answer the gap groups at all? knowledge_gap: it does not state the answer (add the"
            " document); retrieval_or_reader: it does (the system under test failed to use it);"
            " unchecked: nothing to check against.</p>",
            _table(
                ["target · cohort", "", "gap groups", *labels],
                [
                    [
                        _label(t, c, many),
                        "",
                        n.gap_groups,
                        *(n.gap_quality.get(k, 0) for k in labels),
                    ]
                    for t, c, n in _rows(report)
                ],
            ),
            _table(
                ["group", "label", "method", "gap in", "evidence"],
                [
                    [
                        g.group_id,
                        g.label,
                        g.method,
                        ", ".join(g.gap_in),
                        f"{g.doc_id}: {g.excerpt}" if g.excerpt else g.reason,
                    ]
                    for g in dq.groups[:200]
                ],
            ),
        ]
    )


def render_html(report: Report) -> str:
    """The report as a standalone HTML document (no network; one inline script)."""
    many = len(report.targets) > 1
    cohort_rows = [
        [_label(t, c, many), "", *(col.get(n) for col in COHORT_COLUMNS)]
        for t, c, n in _rows(report)
    ]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>groundwatch · GRAMMAR group report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>groundwatch · GRAMMAR group report</h1>",
        f"<p class='muted'>generated {escape(report.generated_at)} · "
        f"schema {escape(report.schema_)} · α = {escape(_fmt(report.alpha))}</p>",
        "<h2>Groups and accuracy</h2>",
        _table(
            ["target · cohort", "", *(col.title for col in COHORT_COLUMNS)],
            cohort_rows,
            helps=["", "", *(col.help for col in COHORT_COLUMNS)],
        ),
        _table(
            ["target · cohort", "", *(col.title for col in DENOMINATOR_COLUMNS)],
            [
                [_label(t, c, many), "", *(col.get(n) for col in DENOMINATOR_COLUMNS)]
                for t, c, n in _rows(report)
            ],
            helps=["", "", *(col.help for col in DENOMINATOR_COLUMNS)],
        ),
        "<p class='muted'>Acc_db = 1 − gap groups / groups; R = correct / (examples − examples in"
        " gap groups); λ = examples in gap groups / examples; Acc = R × (1 − λ). Errors (the target"
        " did not answer) are outside every denominator. A cohort gap is a gap group whose semantic"
        " group another cohort answered: the fact is known, the form fails to reach it.</p>",
        _status_plot(report),
        _metric_plot(report),
        _monitoring_html(report),
        _health_html(report),
        _failing_html(report),
        "<h2>Failure attribution</h2>",
        _attribution_plot(report),
        "<p class='muted'>"
        + "; ".join(f"{escape(c.value)}: {escape(m)}" for c, m in CAUSE_MEANINGS.items())
        + ".</p>",
        "<h2>Cohort hypothesis test</h2>",
    ]
    for target, tr in report.targets.items():
        parts.append(_hypothesis_html(target, tr.hypothesis))
    table3 = [_table3_html(target, tr) for target, tr in report.targets.items()]
    if any(table3):
        parts.append("<h2>GRAMMAR Table 3 view: isolating errors</h2>")
        parts.append(
            "<p class='muted'>Rows: how errors of the retrieval database are kept out (nothing;"
            " remove gap groups = R; balance gap examples = every shared group resampled to the"
            " same number of forms, so λ is equal). Columns: how LLM errors are kept out"
            " (nothing = answer accuracy; context comparison = retrieval accuracy). Each number"
            " with its n.</p>"
        )
        parts.extend(t for t in table3 if t)
    if report.data_quality is not None:
        parts.append(_data_quality_html(report))
    tc = report.target_comparison
    if tc is not None and tc.available and tc.baseline and tc.candidate:
        base, cand = tc.baseline, tc.candidate
        parts.append(f"<h2>Target comparison: {escape(base)} → {escape(cand)}</h2>")
        rows = [
            [
                cohort,
                "",
                c.groups_compared,
                c.sides[base].accuracy,
                c.sides[cand].accuracy,
                c.improved_groups,
                c.worsened_groups,
                c.p_value,
                c.mcnemar.p_value,
                c.conclusion,
            ]
            for cohort, c in tc.cohorts.items()
        ]
        parts.append(
            _table(
                [
                    "cohort",
                    "",
                    "groups",
                    f"Acc {base}",
                    f"Acc {cand}",
                    "improved",
                    "worsened",
                    "paired p",
                    "McNemar p",
                    "conclusion",
                ],
                rows,
            )
        )
        parts.append(
            _stacked(
                [
                    (
                        cohort,
                        [
                            ("improved", c.improved_groups, "#27ae60"),
                            ("unchanged", c.unchanged_groups, "#bdc3c7"),
                            ("worsened", c.worsened_groups, "#c0392b"),
                        ],
                    )
                    for cohort, c in tc.cohorts.items()
                ],
                "Groups by change of per-group accuracy",
                "groups",
            )
        )
    if report.reliability:
        parts.append("<h2>Reference-free evaluators against the judge</h2>")
        parts.append(
            _table(
                [
                    "evaluator",
                    "",
                    "n",
                    "precision",
                    "95% CI",
                    "recall",
                    "95% CI",
                    "catches errors (recall)",
                ],
                [
                    [
                        name,
                        "",
                        r.n,
                        r.precision,
                        _ci(r.precision_ci),
                        r.recall,
                        _ci(r.recall_ci),
                        r.error_recall,
                    ]
                    for name, r in report.reliability.items()
                ],
            )
        )
    if report.human_agreement:
        parts.append("<h2>Agreement with human ratings (Spearman)</h2>")
        parts.append(
            _table(
                ["metric", "", "n", "ρ", "p-value"],
                [
                    [m, "", s.n, s.rho, s.p_value]
                    for m, s in report.human_agreement.spearman.items()
                ],
            )
        )
    if report.scenarios:
        parts.append("<h2>RAGProbe scenarios (failure rate = incorrect / decided)</h2>")
        parts.append(
            _table(
                ["target", "scenario", *(col.title for col in SCENARIO_COLUMNS)],
                [
                    [target, scenario, *(col.get(n) for col in SCENARIO_COLUMNS)]
                    for target, by in report.scenarios.items()
                    for scenario, n in by.items()
                ],
            )
        )
    if report.scores is not None:
        parts.extend(_scores_html(report.scores))
    if report.llm_spend is not None:
        parts.append(f"<h2>LLM spend</h2><p>{escape(report.llm_spend.line)}</p>")
    if report.failing_groups:
        parts.append(f"<script>{_FF_SCRIPT}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _means_plot(
    rows: Sequence[tuple[str, dict[str, float | None]]], cols: Sequence[tuple[str, str]]
) -> str:
    """One small bar per metric and group (all metrics are in [0, 1])."""
    label_w, bar_w, row_h = 170, 60, 22
    width = label_w + (bar_w + 14) * len(cols) + 10
    height = 44 + row_h * len(rows) + 8
    body = [_text(2, 14, "Answer metrics: mean per answer", weight="bold")]
    for j, (_, header) in enumerate(cols):
        body.append(_text(label_w + j * (bar_w + 14), 34, header, size=11, weight="bold"))
    for i, (label, values) in enumerate(rows):
        y = 40 + i * row_h
        body.append(_text(label_w - 8, y + 13, label, anchor="end", size=11))
        for j, (name, header) in enumerate(cols):
            x = label_w + j * (bar_w + 14)
            body.append(f'<rect x="{x}" y="{y + 3}" width="{bar_w}" height="12" fill="#eef2f3"/>')
            v = values.get(name)
            if v is None:
                continue
            body.append(
                f'<rect x="{x}" y="{y + 3}" width="{bar_w * v:.1f}" height="12" fill="#2e86c1">'
                f"<title>{escape(f'{label} {header} = {v:.3f}')}</title></rect>"
            )
    return _svg(width, height, body, "Answer metrics")


def _scores_html(q: ScoresReport) -> list[str]:
    parts: list[str] = []
    groups = [
        (target, cohort, scenario, g)
        for target, by_cohort in q.answer_metrics.items()
        for cohort, by_scenario in by_cohort.items()
        for scenario, g in by_scenario.items()
    ]
    if groups:
        cols = answer_metric_columns({m for *_, g in groups for m in g.metrics})
        parts.append("<h2>Answer metrics (Oro et al.), per target × cohort × scenario</h2>")
        parts.append(
            _means_plot(
                [
                    (
                        f"{t} · {c}" if s == c else f"{t} · {c} · {s}",
                        {m: g.metrics[m].mean for m, _ in cols if m in g.metrics},
                    )
                    for t, c, s, g in groups
                ],
                cols,
            )
        )
        parts.append(
            _table(
                ["target · cohort", "scenario", "answers", *(h for _, h in cols)],
                [
                    [f"{t} · {c}", s, g.answers]
                    + [g.metrics[m].mean if m in g.metrics else None for m, _ in cols]
                    for t, c, s, g in groups
                ],
            )
        )
        parts.append(
            "<p class='muted'>EM, token F1, ROUGE-L and BLEU against the SQL gold answer; Recall,"
            " Precision, AP and nDCG at K and RR from the target's retrieved ids and the"
            " dataset's relevant documents (– where the target reports no ranking or the probe"
            " has no relevant document).</p>"
        )
    if q.audit:
        parts.append("<h2>Self-audit: the rules against the LLM tier</h2>")
        parts.append(
            _table(
                [
                    "target",
                    "rules tier",
                    "audited",
                    "agree",
                    "disagree",
                    "unknown",
                    "agreement",
                    "95% CI",
                    "rules ✓ / LLM ✗",
                    "rules ✗ / LLM ✓",
                ],
                [
                    [
                        t,
                        tier,
                        a.audited,
                        a.agree,
                        a.disagree,
                        a.unknown,
                        a.agreement,
                        _ci(a.agreement_ci),
                        a.rules_correct_llm_incorrect,
                        a.rules_incorrect_llm_correct,
                    ]
                    for t, by in q.audit.items()
                    for tier, a in by.items()
                ],
            )
        )
        parts.append(
            "<p class='muted'>A share of the answers the rules decided is judged by the LLM tier"
            " too; falling agreement means the rules drift on this endpoint's phrasing.</p>"
        )
    if q.reference_free:
        parts.append(
            "<h2>Reference-free evaluators against the SQL truth (GRAMMAR Table 1, live)</h2>"
        )
        parts.append(
            _table(
                [
                    "target",
                    "evaluator",
                    "n",
                    "abstained",
                    "not sampled",
                    "precision",
                    "95% CI",
                    "recall",
                    "95% CI",
                    "wrong-call precision",
                    "95% CI",
                    "wrong-call recall",
                    "95% CI",
                ],
                [
                    [
                        t,
                        name,
                        r.n,
                        r.abstained,
                        r.unsampled,
                        r.precision,
                        _ci(r.precision_ci),
                        r.recall,
                        _ci(r.recall_ci),
                        r.error_precision,
                        _ci(r.error_precision_ci),
                        r.error_recall,
                        _ci(r.error_recall_ci),
                    ]
                    for t, by in q.reference_free.items()
                    for name, r in by.items()
                ],
            )
        )
        parts.append(
            "<p class='muted'>Positive class: the answer is right. Low precision = optimistic"
            " (wrong answers called right), low wrong-call recall = wrong answers it misses.</p>"
        )
    if q.ragprobe_metrics:
        parts.append(
            "<h2>RAGProbe per scenario and metric (failure rate = failed / all probes)</h2>"
        )
        rows: list[list[Any]] = []
        for t, by in q.ragprobe_metrics.items():
            for scenario, sm in by.items():
                rows.append(
                    [f"{t} · {scenario}", "(probe)", sm.probes, sm.passed, sm.failed,
                     sm.undecided, sm.errors, sm.failure_rate, _ci(sm.failure_rate_ci)]
                )  # fmt: skip
                rows.extend(
                    [f"{t} · {scenario}", metric, sm.probes, m.passed, m.failed, m.open, None,
                     m.failure_rate, _ci(m.failure_rate_ci)]
                    for metric, m in sm.metrics.items()
                )  # fmt: skip
        parts.append(
            _table(
                [
                    "target · scenario",
                    "metric",
                    "probes",
                    "passed",
                    "failed",
                    "undecided / open",
                    "errors",
                    "failure rate",
                    "95% CI",
                ],
                rows,
            )
        )
    return parts


def _health_html(report: Report) -> str:
    """Targets that failed on some probe: counts by kind and the first error's message."""
    failing = {t: h for t, h in report.target_health.items() if h.errors}
    if not failing:
        return ""
    rows = [
        [
            t,
            "all failed" if h.all_failed else "",
            h.probes,
            h.answered,
            h.errors,
            ", ".join(f"{k} {n}" for k, n in h.error_kinds.items()),
            h.first_error or "–",
        ]
        for t, h in failing.items()
    ]
    cls = "bad" if any(h.all_failed for h in failing.values()) else "warn"
    return (
        f"<h2 class='{cls}'>Target errors</h2>"
        + _table(
            ["target", "", "probes", "answered", "errors", "by kind", "first error"],
            rows,
        )
        + "<p class='muted'>An error is never a wrong answer: its groups are unknown, not gaps."
        " circuit_open names the error that opened the circuit.</p>"
    )


def _cut(text: str | None) -> str:
    if text is None:
        return "–"
    return text if len(text) <= _HTML_TEXT else text[: _HTML_TEXT - 1] + "…"


def _cell(value: object, sort_value: object = None, cls: str = "") -> str:
    shown = escape(_fmt(value))
    key = escape(str(sort_value if sort_value is not None else _fmt(value)), quote=True)
    klass = f" class='{cls}'" if cls else ""
    return f"<td data-v='{key}'{klass}>{shown}</td>"


def _forms_table(g: GroupResult) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(v)}</td>"
            for v in (
                f.cohort,
                f.verdict + (" (flaky)" if f.flaky else ""),
                f.cause or "",
                f.tier or "",
                _cut(f.question),
                _cut(f.answer) if f.answer is not None else f"({f.error_kind or 'no answer'})",
                _cut(f.reason),
            )
        )
        + "</tr>"
        for f in g.forms
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("cohort", "verdict", "cause", "tier", "question", "answer", "reason")
    )
    sql = escape(g.sql or "– (dataset not stored)")
    params = ", ".join(f"{k} = {v!r}" for k, v in g.params.items())
    hist = ", ".join(f"{h.cohort}@{h.cycle}: {h.status}" for h in g.history)
    return (
        f"<div><strong>SQL</strong> <code>{sql}</code>"
        + (f" <span class='muted'>{escape(params)}</span>" if params else "")
        + f"<br><strong>gold</strong> {escape(g.gold_text or '–')}"
        + f" · <span class='muted'>history {escape(hist or '–')}</span></div>"
        + f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _failing_html(report: Report) -> str:
    """Every failing semantic group: sortable, filterable, each expandable to its forms."""
    if not report.failing_groups:
        return "<h2>Failing facts</h2><p class='ok'>No failing semantic group.</p>"
    from groundwatch.core.tagging import GroupStatus
    from groundwatch.report.groups import SEVERITY

    statuses = sorted(
        {g.status for g in report.failing_groups}, key=lambda s: SEVERITY[GroupStatus(s)]
    )
    options = "".join(f"<option value='{escape(s)}'>{escape(s)}</option>" for s in statuses)
    heads = [
        ("target", "text"),
        ("group", "text"),
        ("status", "number"),
        ("by cohort", "text"),
        ("gold", "text"),
        ("question", "text"),
        ("wrong", "number"),
        ("right", "number"),
        ("errors", "number"),
    ]
    thead = "".join(f"<th data-type='{t}'>{escape(h)}</th>" for h, t in heads)
    body = []
    for g in report.failing_groups:
        question = next(iter(sorted((f.question for f in g.forms if f.question), key=len)), None)
        body.append(
            f"<tr class='ff-row' data-status='{escape(g.status)}'>"
            + _cell(g.target)
            + f"<td data-v='{escape(g.group_id)}'><button class='ff-toggle' type='button'"
            f" aria-expanded='false' aria-label='forms of {escape(g.group_id)}'>▸</button>"
            f"<code>{escape(g.group_id)}</code></td>"
            + _cell(g.status, SEVERITY[GroupStatus(g.status)], f"st-{g.status}")
            + _cell(" ".join(f"{c}: {s}" for c, s in g.cohort_status.items()))
            + _cell(g.gold_text)
            + _cell(_cut(question))
            + _cell(g.incorrect)
            + _cell(g.correct)
            + _cell(g.errors)
            + "</tr>"
            + f"<tr class='ff-detail'><td colspan='{len(heads)}'>{_forms_table(g)}</td></tr>"
        )
    more = report.failing_groups_total - len(report.failing_groups)
    note = f" ({more} more not listed: see `groundwatch groups`)" if more > 0 else ""
    return (
        f"<h2 id='failing-facts-title'>Failing facts</h2><p class='muted'>"
        f"{report.failing_groups_total} semantic groups are not robust{note}: gap (the fact is"
        " missing in every cohort), non-robust (some wordings answered, some not), flaky (answers"
        " flip between cycles), unknown (no decided verdict). Click a column to sort, ▸ to see"
        " every question asked and the answer given.</p>"
        "<div class='ff-controls'><input id='ff-filter' type='search'"
        " placeholder='filter: id, answer, question, SQL…' aria-label='filter'>"
        f" <select id='ff-status' aria-label='status'><option value=''>every status</option>"
        f"{options}</select> <span id='ff-count' class='muted'></span></div>"
        f"<table id='failing-facts' class='ff'><thead><tr>{thead}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
