"""The demo as a use case: the whole pipeline on the embedded bus against the reference RAG.

Builds the demo domain (a fictitious company database and a corpus rendered from it with some
facts deliberately left out), generates semantic groups in short and long cohorts, serves the
reference RAG in-process (keyword-overlap retriever, extractive reader), probes it through the
production runner, judges, tallies, and reports with how well the injected knowledge gaps were
found. RAGProbe scenario probes (S1–S6 with SQL truth) run in the same stream; the report shows
their failure rates per scenario and metric, while the GRAMMAR numbers and the gap detection are
computed over the factual groups only. The judge is configured by the environment as the judge
service is (rules only without an LLM).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from groundwatch.report.document import GroupResult, Report

if TYPE_CHECKING:
    from groundwatch.app.runs import Console
    from groundwatch.stages.analytics.data_quality import DataQualityChecker


class GapDetection(BaseModel):
    """How well the run found the knowledge gaps the demo injected (the demo's own check), and
    what the data-quality check (GRAMMAR Appendix I) says of them: every injected gap should be
    ``knowledge_gap`` — the corpus lacks it by construction."""

    injected_gaps: list[str]
    detected_gaps: list[str]
    gap_recall: float
    gap_precision: float
    injected_gap_quality: dict[str, int] = {}
    detected_gap_quality: dict[str, int] = {}


class DemoOutcome(BaseModel):
    """The demo's result: the group report and the gap-detection check beside it."""

    report: Report
    gaps: GapDetection
    probes: int
    elapsed_s: float
    groups: list[GroupResult] = Field(
        default_factory=list, exclude=True, description="Every group's rows (for --junit)."
    )

    def to_json(self) -> dict[str, object]:
        """One flat JSON document: the report's keys and the check's."""
        return {
            **self.report.to_json(),
            **self.gaps.model_dump(),
            "probes": self.probes,
            "elapsed_s": self.elapsed_s,
        }


def gap_detection(injected: set[str], detected: set[str]) -> GapDetection:
    """Recall and precision of the detected gap groups against the injected ones."""
    hit = injected & detected
    return GapDetection(
        injected_gaps=sorted(injected),
        detected_gaps=sorted(detected),
        gap_recall=len(hit) / len(injected) if injected else 1.0,
        gap_precision=len(hit) / len(detected) if detected else 1.0,
    )


async def run_demo(
    forms: int,
    cohorts: tuple[str, ...],
    runs: int,
    retriever: str,
    console: Console,
    serve: tuple[float, str, int] | None = None,
    scenarios: str = "all",
    store: str | None = None,
    with_groups: bool = False,
    max_llm_calls: int | None = None,
) -> DemoOutcome:
    """The demo: the demo domain and its groups (and scenario probes), the reference RAG asked
    in-process through the production runner, judged by the judge the environment configures,
    tallied, reported; ``serve`` = (interval, host, port) probes continuously first, serving
    ``/metrics`` and ``/report`` until a signal. ``store``: where the judgements go (default: a
    temporary store)."""
    from groundwatch.app.bootstrap import (
        llm_plan,
        load_judge,
        load_selfcheck_sampling,
        spend_of,
        start_tracing,
    )
    from groundwatch.app.embedded import EmbeddedPipeline, reference_runner, run_continuously
    from groundwatch.app.reports import tagger_report
    from groundwatch.app.runs import CycleLine
    from groundwatch.app.store import shown_url
    from groundwatch.core.tagging import Window
    from groundwatch.demo import demo_dataset
    from groundwatch.reference_rag.app import build_pipeline
    from groundwatch.reference_rag.settings import ReferenceRagSettings
    from groundwatch.reference_rag.target import ReferenceTarget
    from groundwatch.report.text import render_text
    from groundwatch.runtime.evidence_settings import evidence_rule
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    say = console.say
    started = time.perf_counter()
    domain, groups = await asyncio.to_thread(demo_dataset, forms, cohorts)
    say(
        f"demo domain: {len(domain.documents)} documents, {len(groups)} semantic groups, "
        f"{sum(len(g.forms) for g in groups)} text forms ({', '.join(cohorts)}; {forms} per cohort)"
    )
    probes_of = groups
    if scenarios.strip().lower() != "none":
        from groundwatch.adapters.scenario_files import select_scenarios
        from groundwatch.adapters.sources.scenarios import grounded_scenarios

        scenario_run = await asyncio.to_thread(
            grounded_scenarios,
            domain.db_url,
            select_scenarios(scenarios),
            corpus=domain.documents,
            seed=domain.seed,
            dataset_id="demo-scenarios",
        )
        probes_of = [*groups, *scenario_run.items]
        kept = {s: n["kept"] for s, n in scenario_run.summary().items()}
        say(f"RAGProbe scenario probes (SQL truth): {kept}")
    settings = ReferenceRagSettings(rag_retriever=retriever)
    # the reference target has no sampling knob: SelfCheck reports it as not sampled
    ledger, estimate = llm_plan(probes_of, 1, max_calls=max_llm_calls, sampled_targets=0)
    # K of the IR metrics: what the reference RAG retrieves
    judge = load_judge(metrics_k=settings.rag_top_k, ledger=ledger)
    say(judge.describe)
    for line in estimate.lines():
        say(line)
    stop_tracing = start_tracing("groundwatch-demo")
    # in-process without the HTTP stack (the services ask the same pipeline over HTTP)
    runner, close = reference_runner(
        ReferenceTarget(build_pipeline(settings, dict(domain.documents))),
        selfcheck=load_selfcheck_sampling(),
    )
    # the data-quality check reads the corpus the reference RAG answers from
    quality = DataQualityChecker(domain.documents)
    pipeline = EmbeddedPipeline(
        probes_of,
        runner,
        judge=judge,
        on_stop=[close, stop_tracing],
        database_url=store,
        data_quality=quality,
        window=Window(runs=1, evidence=evidence_rule()),
    )
    await pipeline.start()
    try:
        if serve is not None:
            interval, host, port = serve
            per_cycle = CycleLine()
            say(
                f"probing every {interval:g}s; metrics on http://{host}:{port}/metrics, "
                f"report on http://{host}:{port}/report.html (Ctrl-C to stop)"
            )
            await run_continuously(
                pipeline,
                interval_s=interval,
                host=host,
                port=port,
                on_cycle=lambda r: say(
                    f"cycle {', '.join(map(str, r.cycles))}: {r.published} probes in"
                    f" {r.elapsed_s:.1f}s — " + per_cycle.after(pipeline.analytics.tagger)
                ),
            )
        with console.progress("probing") as update:
            result = await pipeline.run(runs, on_progress=update)
        await pipeline.analytics.check_all_gaps()
        report, every = tagger_report(
            result.tagger,
            evidence=pipeline.evidence,
            compare=(cohorts[0], cohorts[1]) if len(cohorts) >= 2 else None,
            data_quality=quality.results(),
            spend=spend_of(ledger, estimate.model),
            with_groups=with_groups,
        )
    finally:
        await pipeline.stop()
    say(
        f"probed the reference RAG ({retriever} retriever, extractive reader): "
        f"{result.published} probes in {result.elapsed_s:.1f}s, {result.dead_letters} dead letters"
    )
    say("")
    say(render_text(report))
    injected = domain.injected_gap_group_ids(groups)
    # scenario groups have ids of their own: a failed S6 probe is no knowledge gap of a fact
    factual = {g.group_id for g in groups}
    detected = result.tagger.knowledge_gaps("reference") & factual
    gaps = gap_detection(injected, detected).model_copy(
        update={
            "injected_gap_quality": _labels(quality, injected),
            "detected_gap_quality": _labels(quality, detected),
        }
    )
    say(
        f"\ninjected knowledge gaps: {len(injected)} groups; detected gap groups: {len(detected)}; "
        f"recall {gaps.gap_recall:.3f}, precision {gaps.gap_precision:.3f}"
    )
    say(f"data-quality labels of the injected gaps: {gaps.injected_gap_quality}")
    if store is not None:
        say(
            f"stored in {shown_url(store)} (series {pipeline.generator.series}, run"
            f" {', '.join(result.run_ids)}): `groundwatch groups --status gap` lists the gap"
            " groups, `groundwatch show GROUP_ID` one of them"
        )
    say(f"done in {time.perf_counter() - started:.1f}s")
    return DemoOutcome(
        report=report,
        gaps=gaps,
        probes=result.published,
        elapsed_s=result.elapsed_s,
        groups=every or [],
    )


def _labels(quality: DataQualityChecker, groups: set[str]) -> dict[str, int]:
    """Data-quality labels of ``groups`` (unchecked when the check has none)."""
    out: dict[str, int] = {}
    for gid in groups:
        check = quality.known(gid)
        label = check.label.value if check is not None else "unchecked"
        out[label] = out.get(label, 0) + 1
    return out
