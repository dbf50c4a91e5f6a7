"""The group report as plain text: what the demo, ``groundwatch run`` and ``report`` print."""

from __future__ import annotations

from collections.abc import Sequence

from groundwatch.core.tagging import CAUSE_MEANINGS, STATUS_CAUSES, UNSETTLED_MEANINGS, Cause
from groundwatch.report.columns import (
    COHORT_COLUMNS,
    DENOMINATOR_COLUMNS,
    SCENARIO_COLUMNS,
    answer_metric_columns,
    fmt,
    interval,
    table3_rows,
)
from groundwatch.report.document import GroupResult, Report, ScoresReport, TargetReport
from groundwatch.report.groups import health_lines

#: Failing groups the text report shows (the rest: ``groundwatch groups``).
TEXT_FAILING = 10


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], names: int = 2) -> str:
    """Left-aligned first ``names`` columns (names), right-aligned numbers."""
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < names else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


def render_text(report: Report) -> str:
    """Every section the report has, as aligned plain-text tables."""
    parts: list[str] = []
    rows = [
        [target, cohort, *(fmt(col.get(c), col.digits) for col in COHORT_COLUMNS)]
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
    ]
    window = (
        f"each group over its last {report.window_runs} cycle(s)"
        if report.window_runs
        else "every cycle pooled"
    )
    where = (
        f"series {', '.join(report.series)}, cycle {report.latest_cycle}; " if report.series else ""
    )
    parts.append(
        f"GRAMMAR group report ({where}{window}; rates over decided groups, each form once)\n"
        + table(["target", "cohort", *(col.text for col in COHORT_COLUMNS)], rows)
    )
    nrows = [
        [target, cohort, *(fmt(col.get(c), col.digits) for col in DENOMINATOR_COLUMNS)]
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
    ]
    parts.append(
        "Denominators (the n of each rate above)\n"
        + table(["target", "cohort", *(col.text for col in DENOMINATOR_COLUMNS)], nrows)
    )
    unjudged = [
        f"{target}/{cohort}"
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
        if c.examples == 0 and c.probed > c.errors
    ]
    if unjudged:
        parts.append(
            f"Answer accuracy unavailable for {', '.join(unjudged)}: no answer has a decided"
            " verdict (not judged, or the judge abstained) — unavailable, not 0"
        )
    arows = [
        [target, cohort, *(str(c.attribution.get(k.value, 0)) for k in Cause)]
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
    ]
    # the causes that name a group status rather than a cause, said in words where counted
    unsettled = [
        STATUS_CAUSES[st]
        for st in UNSETTLED_MEANINGS
        if any(
            c.attribution.get(STATUS_CAUSES[st].value)
            for tr in report.targets.values()
            for c in tr.cohorts.values()
        )
    ]
    parts.append(
        "Failure attribution\n"
        + table(["target", "cohort", *(k.value for k in Cause)], arows)
        + "".join(f"\n  {k.value}: {CAUSE_MEANINGS[k]}" for k in unsettled)
    )
    for target, tr in report.targets.items():
        h = tr.hypothesis
        if not h.available:
            parts.append(f"Cohort test ({target}): {h.reason or 'not run'}")
            continue
        a, b = h.cohorts
        lines = [
            f"Cohort test ({target}): {a} vs {b} over {h.groups_compared} groups"
            f" ({h.mutual_gap_groups} mutual gap groups left out)"
        ]
        for c in (a, b):
            s = h.sides[c]
            lines.append(
                f"  {c}: Acc {fmt(s.accuracy)} {_bracket(s.accuracy_ci)}"
                f"  R {fmt(s.refined_accuracy)} {_bracket(s.refined_accuracy_ci)}"
                f"  λ(all) {fmt(s.lambda_all_groups)}"
            )
        pt, z, es = h.paired_test, h.z_test, h.effect_size
        assert pt is not None and z is not None and es is not None
        lines.append(
            f"  paired permutation p = {fmt(h.p_value, 4)}, Wilcoxon p = "
            f"{fmt(pt.wilcoxon_p, 4)}, z-test p = {fmt(z.p_value, 4)},"
            f" Cohen's h = {fmt(es.cohens_h)}, rank-biserial = {fmt(es.rank_biserial)}"
        )
        lines.append(f"  → {h.conclusion}")
        lines.extend(f"  ! {w}" for w in h.warnings)
        parts.append("\n".join(lines))
    for target, tr in report.targets.items():
        view = table3(target, tr)
        if view:
            parts.append(view)
    if report.data_quality is not None:
        parts.append(data_quality_text(report))
    tc = report.target_comparison
    if tc is not None and tc.available:
        for cohort, cc in tc.cohorts.items():
            mc = cc.mcnemar
            parts.append(
                f"Target comparison {tc.baseline} → {tc.candidate} ({cohort}):"
                f" over {cc.groups_compared} semantic groups {cc.improved_groups} better,"
                f" {cc.worsened_groups} worse, paired p = {fmt(cc.p_value, 4)};"
                f" over {mc.both_correct + mc.only_first + mc.only_second + mc.both_wrong}"
                f" text forms {mc.only_second} right only for {tc.candidate},"
                f" {mc.only_first} only for {tc.baseline}, McNemar p = {fmt(mc.p_value, 4)}"
                f" → {cc.conclusion}"
            )
    if report.reliability:
        rrows = [
            [
                name,
                "",
                fmt(r.precision),
                _bracket(r.precision_ci),
                fmt(r.recall),
                _bracket(r.recall_ci),
                str(r.n),
            ]
            for name, r in report.reliability.items()
        ]
        parts.append(
            "Reference-free evaluators vs judge\n"
            + table(["evaluator", "", "precision", "95% CI", "recall", "95% CI", "n"], rrows)
        )
    if report.human_agreement:
        hrows = [
            [m, "", fmt(s.rho), fmt(s.p_value, 4), str(s.n)]
            for m, s in report.human_agreement.spearman.items()
        ]
        parts.append(
            "Spearman with human ratings\n" + table(["metric", "", "rho", "p", "n"], hrows)
        )
    if report.scenarios:
        srows = [
            [target, scenario, *(fmt(col.get(n), col.digits) for col in SCENARIO_COLUMNS)]
            for target, by in report.scenarios.items()
            for scenario, n in by.items()
        ]
        parts.append(
            "RAGProbe scenarios (failure rate = incorrect / decided)\n"
            + table(["target", "scenario", *(col.text for col in SCENARIO_COLUMNS)], srows)
        )
    if report.scores is not None:
        parts.extend(scores_text(report.scores))
    if report.transitions:
        trows = [
            [tr.target, tr.cohort, tr.group_id[:16], tr.from_status, tr.to_status, tr.kind,
             str(tr.cycle)]
            for tr in report.transitions[:20]
        ]  # fmt: skip
        parts.append(
            "Latest status transitions (newest first)\n"
            + table(["target", "cohort", "group", "from", "to", "kind", "cycle"], trows)
        )
    if report.failing_groups_total:
        parts.append(failing_text(report))
    health = health_lines(report.target_health)
    if health:
        parts.append("Target errors\n" + "\n".join(f"  {line}" for line in health))
    if report.open_domain is not None:
        od = report.open_domain
        parts.append(
            f"Open-domain filter: {od.groups} groups answered by {od.baseline} without retrieval"
            " are left out of the numbers above"
        )
    if report.llm_spend is not None:
        parts.append(report.llm_spend.line)
    return "\n\n".join(parts) + "\n"


def table3(target: str, tr: TargetReport) -> str:
    """The Table 3 view of one target as text ('' when there is no cohort pair)."""
    rows = table3_rows(tr)
    b = tr.balanced
    if not rows or b is None:
        return ""
    a, c = b.cohorts
    lines = [
        f"GRAMMAR Table 3 view ({target}): errors isolated from the retrieval database × from the"
        " LLM (context comparison = retrieval accuracy)",
        table(["retrieval database", "LLM", a, c], rows),
    ]
    if b.available:
        lam = {x: fmt(side.lambda_) for x, side in b.sides.items()}
        lines.append(
            f"  balanced: {b.forms_per_group} forms per shared group, {b.groups} decided groups"
            f" ({b.mutual_gap_groups} mutual gap groups, λ {lam.get(a, '–')} / {lam.get(c, '–')}),"
            f" {b.retrieval_groups} groups with retrieval judgements; seed {b.seed}"
        )
    else:
        lines.append(f"  balanced: {b.reason}")
    return "\n".join(lines)


def data_quality_text(report: Report) -> str:
    """The gap groups' data-quality labels per cohort, and the groups the corpus does answer."""
    dq = report.data_quality
    assert dq is not None
    labels = list(dq.labels)
    rows = [
        [target, cohort, str(c.gap_groups), *(str(c.gap_quality.get(k, 0)) for k in labels)]
        for target, tr in report.targets.items()
        for cohort, c in tr.cohorts.items()
    ]
    how = "BM25 over its sentences" + (", then an LLM reading the best documents" if dq.mrc else "")
    lines = [
        f"Data quality of gap groups (GRAMMAR Appendix I: can the corpus answer them? corpus of"
        f" {dq.corpus_documents} documents, {how})",
        table(["target", "cohort", "gap", *labels], rows),
    ]
    answered = [g for g in dq.groups if g.label == "retrieval_or_reader"]
    if answered:
        lines.append(
            f"  {len(answered)} gap group(s) the corpus does answer (the system under test failed"
            " to retrieve or read it):"
        )
        for g in answered[:10]:
            where = f"{g.doc_id}: {g.excerpt!r}" if g.excerpt else (g.doc_id or g.reason)
            lines.append(f"    {g.group_id[:16]}  gap in {', '.join(g.gap_in)}  ← {where[:160]}")
    return "\n".join(lines)


def scores_text(q: ScoresReport) -> list[str]:
    """The scores tables: answer metrics, self-audit, reference-free reliability, RAGProbe
    metric failures (each only when it has data)."""
    parts: list[str] = []
    groups = [
        (target, cohort, scenario, g)
        for target, by_cohort in q.answer_metrics.items()
        for cohort, by_scenario in by_cohort.items()
        for scenario, g in by_scenario.items()
    ]
    if groups:
        cols = answer_metric_columns({m for *_, g in groups for m in g.metrics})
        mrows = [
            [target, cohort, scenario, str(g.answers)]
            + [fmt(g.metrics[m].mean) if m in g.metrics else "–" for m, _ in cols]
            for target, cohort, scenario, g in groups
        ]
        parts.append(
            "Answer metrics (mean per answer against the SQL gold; IR metrics where the target"
            " reports retrieved ids and the dataset knows the relevant documents)\n"
            + table(
                ["target", "cohort", "scenario", "answers", *(h for _, h in cols)], mrows, names=3
            )
        )
    if q.audit:
        arows = [
            [target, tier, str(a.audited), str(a.agree), str(a.disagree), str(a.unknown),
             fmt(a.agreement), _bracket(a.agreement_ci), str(a.rules_correct_llm_incorrect),
             str(a.rules_incorrect_llm_correct)]
            for target, by in q.audit.items()
            for tier, a in by.items()
        ]  # fmt: skip
        parts.append(
            "Self-audit: rule-decided answers also judged by the LLM tier\n"
            + table(
                [
                    "target",
                    "rules tier",
                    "audited",
                    "agree",
                    "disagree",
                    "unknown",
                    "agreement",
                    "95% CI",
                    "rules✓ llm✗",
                    "rules✗ llm✓",
                ],
                arows,
            )
        )
    if q.reference_free:
        rrows = [
            [target, name, str(r.n), str(r.abstained), fmt(r.precision), _bracket(r.precision_ci),
             fmt(r.recall), _bracket(r.recall_ci), fmt(r.error_precision),
             _bracket(r.error_precision_ci), fmt(r.error_recall), _bracket(r.error_recall_ci)]
            for target, by in q.reference_free.items()
            for name, r in by.items()
        ]  # fmt: skip
        parts.append(
            "Reference-free evaluators against the SQL truth (GRAMMAR Table 1, live; 'right'"
            " calls: precision/recall, 'wrong' calls: precision/recall)\n"
            + table(
                [
                    "target",
                    "evaluator",
                    "n",
                    "abstained",
                    "prec",
                    "95% CI",
                    "recall",
                    "95% CI",
                    "wrong prec",
                    "95% CI",
                    "wrong recall",
                    "95% CI",
                ],
                rrows,
            )
        )
        for rf_target, rf_by in q.reference_free.items():
            for rf_name, rel in rf_by.items():
                if rel.unsampled:
                    parts.append(
                        f"{rf_name} on {rf_target}: {rel.unsampled} probes not scored — the target"
                        " cannot be sampled (http_json: declare `sampling` in the targets file;"
                        " callable: take a `temperature` parameter)\n"
                    )
    if q.ragprobe_metrics:
        prows: list[list[str]] = []
        for target, by in q.ragprobe_metrics.items():
            for scenario, sm in by.items():
                prows.append(
                    [target, scenario, "(probe)", str(sm.probes), str(sm.passed), str(sm.failed),
                     str(sm.undecided), str(sm.errors), fmt(sm.failure_rate),
                     _bracket(sm.failure_rate_ci)]
                )  # fmt: skip
                for metric, m in sm.metrics.items():
                    prows.append(
                        [target, scenario, metric, str(sm.probes), str(m.passed), str(m.failed),
                         str(m.open), "", fmt(m.failure_rate), _bracket(m.failure_rate_ci)]
                    )  # fmt: skip
        parts.append(
            "RAGProbe per scenario and metric (failure rate = failed / all probes; errors and"
            " undecided or open in their own columns)\n"
            + table(
                [
                    "target",
                    "scenario",
                    "metric",
                    "probes",
                    "passed",
                    "failed",
                    "undecided/open",
                    "errors",
                    "failure",
                    "95% CI",
                ],
                prows,
            )
        )
    return parts


def _bracket(ci: tuple[float, float] | None) -> str:
    return "[–]" if not ci else interval(ci)


def failing_text(report: Report, limit: int = TEXT_FAILING) -> str:
    """The worst failing facts, one line each: status, group, gold answer, a question asked."""
    by_status: dict[str, int] = {}
    for g in report.failing_groups:
        by_status[g.status] = by_status.get(g.status, 0) + 1
    counts = ", ".join(f"{n} {s}" for s, n in by_status.items())
    shown = report.failing_groups[:limit]
    rows = [
        [g.target, g.status, g.group_id, _short(g.gold_text, 24), _short(_question(g), 60)]
        for g in shown
    ]
    more = report.failing_groups_total - len(shown)
    tail = (
        f"\n… {more} more: `groundwatch groups --status gap` lists them, "
        "`groundwatch show GROUP_ID` shows one"
        if more > 0
        else "\n`groundwatch show GROUP_ID` shows a group's questions and answers"
    )
    return (
        f"Failing facts ({report.failing_groups_total} semantic groups: {counts})\n"
        + table(["target", "status", "group", "gold", "question"], rows, names=5)
        + tail
    )


def _question(g: GroupResult) -> str | None:
    """The shortest question the target got wrong (else the shortest asked)."""
    asked = [f.question for f in g.forms if f.question]
    wrong = [f.question for f in g.forms if f.verdict != "correct" and f.question]
    pool = wrong or asked
    return min(pool, key=len) if pool else None


def _short(text: str | None, n: int) -> str:
    if not text:
        return "–"
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
