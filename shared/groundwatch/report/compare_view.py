"""The comparison of two evaluations as text and as an HTML page in the report's style: the
figures' deltas per target and cohort, the sign test, and every changed group worst first with
the answers that changed (:class:`~groundwatch.core.compare.Comparison`)."""

from __future__ import annotations

from html import escape

from groundwatch.core.compare import Comparison, FigureDelta, FormChange, GroupChange
from groundwatch.report.columns import fmt, interval
from groundwatch.report.html import _CSS
from groundwatch.report.text import table

#: The comparison's tables: text cells left-aligned and on top (the report's own tables, of
#: numbers, are right-aligned; ``table.ff`` carries the report's sorting script).
_CMP_CSS = "<style>table.cmp td,table.cmp th{text-align:left;vertical-align:top}</style>"
#: Changed groups the text lists (the JSON and the HTML page list every one).
TEXT_CHANGES = 20
_TITLES = {"acc_db": "Acc_db", "refined_accuracy": "R", "lambda": "λ", "coverage": "coverage"}


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _delta_rows(comparison: Comparison) -> list[list[str]]:
    rows = []
    many = len(comparison.targets) > 1
    for target, td in comparison.targets.items():
        name = target if td.target_a == target else f"{td.target_a}→{target}"
        for cohort, deltas in td.cohorts.items():
            for d in deltas:
                rows.append(
                    [
                        f"{name}/{cohort}" if many or name != target else cohort,
                        _TITLES[d.figure],
                        f"{fmt(d.a)} (n={d.a_n})",
                        f"{fmt(d.b)} (n={d.b_n})",
                        _signed(d.delta),
                        interval(d.delta_ci),
                    ]
                )
    return rows


def _sign_line(comparison: Comparison) -> str:
    p = comparison.paired
    return (
        f"sign test over {p.groups} groups decided in both: {p.worse} worse, {p.better} better,"
        f" {p.ties} unchanged; {p.verdict(comparison.alpha)}"
    )


def _short(text: str | None, n: int = 80) -> str:
    if text is None:
        return "–"
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _answers(f: FormChange, n: int) -> str:
    """What was answered: before → after, or the one side's answer a baseline file lacks."""
    if f.before_answer is None and f.after_answer is None:
        return ""
    if f.before_answer is None:
        return f": answered {_short(f.after_answer, n)}"
    return f": {_short(f.before_answer, n)} → {_short(f.after_answer, n)}"


def _form_lines(c: GroupChange, limit: int = 3) -> list[str]:
    out = []
    for f in c.forms[:limit]:
        answers = _answers(f, 40)
        out.append(
            f"      [{f.cohort}] {f.before or '–'}→{f.after or '–'}"
            f" {_short(f.question, 50)}{answers}"
        )
    if len(c.forms) > limit:
        out.append(f"      … {len(c.forms) - limit} more forms changed")
    return out


def summary_line(comparison: Comparison) -> str:
    """One line: how many groups moved which way against ``comparison.a``, and the sign test."""
    counts, p = comparison.counts, comparison.paired
    return (
        f"against {comparison.a}: {counts['regression']} regressed, {counts['recovery']}"
        f" recovered, {counts['lost']} lost their evidence;"
        f" {p.verdict(comparison.alpha)}"
    )


def render_diff_text(comparison: Comparison, limit: int = TEXT_CHANGES) -> str:
    counts = comparison.counts
    lines = [
        f"diff {comparison.a} → {comparison.b} (dataset {comparison.dataset_id or '–'}"
        + ("" if comparison.same_dataset else ", another dataset version")
        + ")",
        "",
        table(["target/cohort", "figure", "A", "B", "B − A", "95% CI"], _delta_rows(comparison)),
        "",
        f"groups: {counts['regression']} regressed, {counts['recovery']} recovered,"
        f" {counts['lost']} lost their evidence (→ unknown/absent),"
        f" {counts['gained']} gained it",
        _sign_line(comparison),
    ]
    if comparison.changes:
        lines += ["", f"changed groups, worst first ({len(comparison.changes)}):"]
        for c in comparison.changes[:limit]:
            gold = f"  gold: {_short(c.gold, 40)}" if c.gold else ""
            lines.append(f"  {c.kind:<10} {c.target}/{c.group_id} {c.transition}{gold}")
            lines += _form_lines(c)
        if len(comparison.changes) > limit:
            lines.append(f"  … {len(comparison.changes) - limit} more (--json lists every one)")
    return "\n".join(lines) + "\n"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """A table of cells already escaped (some carry markup)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='cmp'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _delta_cell(d: FigureDelta) -> str:
    if d.delta is None:
        return "–"
    cls = ""
    if d.delta_ci is not None and (d.delta_ci[0] > 0 or d.delta_ci[1] < 0):
        better = d.delta > 0 if d.figure != "lambda" else d.delta < 0
        cls = " class='ok'" if better else " class='bad'"
    return f"<span{cls}>{escape(_signed(d.delta))}</span>"


def comparison_section(comparison: Comparison, level: int = 2) -> str:
    """The comparison's HTML body: figures, the sign test, the changed groups."""
    rows = []
    for target, td in comparison.targets.items():
        for cohort, deltas in td.cohorts.items():
            for d in deltas:
                rows.append(
                    [
                        escape(f"{target}/{cohort}"),
                        escape(_TITLES[d.figure]),
                        escape(f"{fmt(d.a)} (n={d.a_n})"),
                        escape(f"{fmt(d.b)} (n={d.b_n})"),
                        _delta_cell(d),
                        escape(interval(d.delta_ci)),
                    ]
                )
    change_rows = []
    for c in comparison.changes:
        forms = "<br>".join(
            escape(
                f"[{f.cohort}] {f.before or '–'}→{f.after or '–'} {_short(f.question, 120)}"
                + _answers(f, 120)
            )
            for f in c.forms
        )
        change_rows.append(
            [
                f"<span class='st-{escape(c.after)}'>{escape(c.kind)}</span>",
                escape(f"{c.target}/{c.group_id}"),
                escape(c.transition),
                escape(c.gold or "–"),
                forms or "–",
            ]
        )
    counts = comparison.counts
    return "\n".join(
        [
            _CMP_CSS,
            f"<p class='muted'>dataset {escape(comparison.dataset_id or '–')}"
            + (
                ""
                if comparison.same_dataset
                else " · <span class='warn'>another dataset version</span>"
            )
            + f" · α = {comparison.alpha:g}</p>",
            f"<h{level}>Figures, {escape(comparison.a)} → {escape(comparison.b)}</h{level}>",
            _table(["target/cohort", "figure", "A", "B", "B − A", "95% CI"], rows),
            f"<h{level}>Groups</h{level}>",
            f"<p>{counts['regression']} regressed, {counts['recovery']} recovered,"
            f" {counts['lost']} lost their evidence, {counts['gained']} gained it.</p>",
            f"<p>{escape(_sign_line(comparison))}</p>",
            f"<h{level}>Changed groups, worst first</h{level}>",
            _table(["change", "group", "status", "gold", "forms that changed"], change_rows)
            if change_rows
            else "<p class='ok'>No group changed status.</p>",
        ]
    )


def render_diff_html(comparison: Comparison) -> str:
    """The comparison as a standalone HTML page (no network, no script)."""
    return "\n".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            "<title>groundwatch · comparison</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>groundwatch · {escape(comparison.a)} → {escape(comparison.b)}</h1>",
            comparison_section(comparison),
            "</body></html>",
        ]
    )


def with_comparison(report_html: str, comparison: Comparison) -> str:
    """The group report's page with the comparison against its baseline as its last section."""
    section = (
        f"<h2 id='baseline'>Against the baseline {escape(comparison.a)}</h2>"
        + comparison_section(comparison, level=3)
    )
    head, body_end, rest = report_html.rpartition("</body>")
    return f"{head}{section}{body_end}{rest}" if body_end else report_html + section
