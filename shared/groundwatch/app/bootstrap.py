"""The composition root: every stage and what it is given is made here, once — the generator and
the record of its cycles, the runner and its targets, the judge with its LLM client and verdict
cache, the analytics stage with its telemetry, the dead-letter keeper, the LLM plan and the
data-quality check — so the services (:mod:`groundwatch.app.services`), the embedded pipeline
(:mod:`groundwatch.app.embedded`: ``groundwatch run``, ``groundwatch demo``) and
``groundwatch.evaluate`` build each the same way; they differ only in the bus and in how they
consume. A new stage is wired here and consumed by both.

The judge service, ``groundwatch run`` and ``groundwatch demo`` all judge with the same settings
(``GW_JUDGE_*``, ``GW_LLM_*``, ``GW_REFERENCE_FREE*``): without an LLM configured the rules
decide alone and what they leave undecided stays undecided (shown as coverage, never guessed);
with one, the LLM tier decides the rest, audits a share of the rules' verdicts, and the
reference-free evaluators run when named.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundwatch.adapters.llm.cache import VerdictCache
from groundwatch.adapters.llm.client import LlmClient, LlmLedger, LlmSettings
from groundwatch.core.model import Expected, SemanticGroup
from groundwatch.report.document import LlmSpend
from groundwatch.runtime.settings import load_settings
from groundwatch.stages.judge.reference_free import ReferenceFreeSettings
from groundwatch.stages.judge.semantic import SemanticSettings
from groundwatch.stages.judge.spend import LlmEstimate, estimate_llm_calls
from groundwatch.stages.judge.tiered import JudgeSettings, TieredJudge, build_judge
from groundwatch.stages.runner.lanes import ResponseHook, Runner, SelfCheckSampling

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from sqlalchemy import Engine

    from groundwatch.adapters.bus.base import Bus
    from groundwatch.adapters.sources.connect import SourcePolicy
    from groundwatch.contracts import Topics
    from groundwatch.core.cycles import SeriesClock
    from groundwatch.core.data_quality import GroupSpec
    from groundwatch.core.tagging import Window
    from groundwatch.stages.analytics.data_quality import DataQualityChecker
    from groundwatch.stages.analytics.stage import AnalyticsStage
    from groundwatch.stages.dead_letters.stage import DeadLetterKeeper
    from groundwatch.stages.generator.stage import GeneratorStage, RunSummary
    from groundwatch.stages.runner.stage import RunnerStage


def load_judge(
    database_url: str | None = None, *, ledger: LlmLedger | None = None, **overrides: Any
) -> TieredJudge:
    """The judge the environment configures, its LLM client and verdict cache made here and
    only when needed.
    ``overrides`` are ``JudgeSettings`` fields an entry point knows better (the demo's K is its
    reference RAG's top-k)."""
    settings = load_settings(JudgeSettings, **overrides)
    reference_free = load_settings(ReferenceFreeSettings)
    semantic = load_settings(SemanticSettings)
    needs_llm = (
        settings.uses_llm or bool(reference_free.reference_free) or bool(semantic.llm_metrics)
    )
    client = (
        llm_client(_feature(settings.uses_llm, bool(reference_free.reference_free)), ledger=ledger)
        if needs_llm
        else None
    )
    return build_judge(
        settings,
        client=client,
        cache=verdict_cache(settings, database_url) if client is not None else None,
        reference_free=reference_free,
        semantic=semantic,
    )


def verdict_cache(settings: JudgeSettings, database_url: str | None) -> VerdictCache | None:
    """The LLM tier's verdict cache (``GW_JUDGE_LLM_CACHE``): in the store when there is one, so
    a restarted judge asks no question twice; in memory otherwise."""
    if not (settings.uses_llm and settings.llm_cache):
        return None
    if database_url:
        from groundwatch.adapters.db.engine import make_engine
        from groundwatch.adapters.llm.cache import SqlVerdictCache

        return SqlVerdictCache(make_engine(database_url))
    from groundwatch.adapters.llm.cache import MemoryVerdictCache

    return MemoryVerdictCache()


def llm_plan(
    groups: Sequence[SemanticGroup],
    targets: int,
    *,
    cycles: int = 1,
    sample: int = 0,
    max_calls: int | None = None,
    sampled_targets: int | None = None,
) -> tuple[LlmLedger, LlmEstimate]:
    """The run's LLM ledger (its budget: ``max_calls``, else ``GW_LLM_BUDGET``) and the estimate
    of its calls and cost, from the settings the judge will be built with."""
    llm = load_settings(LlmSettings)
    budget = max_calls if max_calls is not None else llm.budget
    judge = load_settings(JudgeSettings)
    estimate = estimate_llm_calls(
        groups,
        targets,
        judge=judge,
        reference_free=load_settings(ReferenceFreeSettings),
        cycles=cycles,
        sample=sample,
        sampled_targets=sampled_targets,
        semantic=load_settings(SemanticSettings),
        model=llm.model,
        price=llm.price,
        budget=budget,
    )
    return LlmLedger(budget), estimate


def spend_of(ledger: LlmLedger, model: str) -> LlmSpend | None:
    """The report's LLM-spend section from the run's ledger (None when nothing was asked)."""
    if not ledger.calls and not ledger.refused:
        return None
    priced = ledger.unpriced == 0
    return LlmSpend(
        model=model,
        calls=ledger.calls,
        refused=ledger.refused,
        budget=ledger.max_calls,
        prompt_tokens=ledger.prompt_tokens,
        completion_tokens=ledger.completion_tokens,
        cost_usd=ledger.cost_usd if priced else None,
    )


def _feature(llm_tier: bool, reference_free: bool = True) -> str:
    if llm_tier:
        return "GW_JUDGE_LLM_ENABLED (the LLM judge tier)"
    if reference_free:
        return "GW_REFERENCE_FREE (the reference-free evaluators)"
    return "GW_LLM_METRICS (the LLM-derived answer metrics)"


def load_selfcheck_sampling() -> SelfCheckSampling | None:
    """The runner's SelfCheck sampling when ``GW_REFERENCE_FREE`` names selfcheck, else None."""
    rf = load_settings(ReferenceFreeSettings)
    if not rf.selfcheck:
        return None
    return SelfCheckSampling(rf.reference_free_share, rf.selfcheck_samples)


def llm_client(feature: str | None = None, *, ledger: LlmLedger | None = None) -> LlmClient:
    """The LLM client ``GW_LLM_*`` configures; with ``feature`` (what needs it, as the user
    named it) a missing model or key is a :class:`~groundwatch.errors.ConfigError` saying so."""
    settings = load_settings(LlmSettings)
    return LlmClient(settings.require(feature) if feature else settings, ledger=ledger)


#: What the data-quality check's LLM step is called in an error naming it.
MRC = "--mrc (the reading-comprehension check)"


def data_quality_checker(
    corpus: Path,
    option: str,
    *,
    mrc: bool = False,
    ledger: LlmLedger | None = None,
    feature: str | None = MRC,
) -> DataQualityChecker:
    """The gap groups' data-quality check over ``corpus`` (GRAMMAR Appendix I; ``option`` names
    where the corpus came from, in errors); with ``mrc`` the LLM ``GW_LLM_*`` configures reads
    the best documents for what BM25 does not find (``feature`` names it when it is missing)."""
    from groundwatch.adapters.corpus_files import load_corpus
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    documents = load_corpus(corpus, option)
    if not mrc:
        return DataQualityChecker(documents)
    from groundwatch.reference_rag.llm_reader import LlmReader

    reader = LlmReader(llm_client(feature, ledger=ledger))
    return DataQualityChecker(documents, reader=reader.read)


def target_names(targets_file: Path) -> list[str]:
    """The targets a targets file names (a bad file is a ConfigError naming the field)."""
    from groundwatch.adapters.targets.config import load_targets

    return [c.name for c in load_targets(targets_file)]


def sampled_targets(targets_file: Path) -> int:
    """How many of the file's targets can be sampled (SelfCheck asks them several times)."""
    from groundwatch.adapters.targets.config import can_sample, load_targets

    return sum(1 for c in load_targets(targets_file) if can_sample(c))


async def file_runner(
    targets_file: Path | None,
    *,
    reference_url: str | None = None,
    reference_concurrency: int = 32,
    on_response: ResponseHook | None = None,
    on_stream: Callable[[str, float | None, float], None] | None = None,
    max_connections: int = 512,
) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """The runner over a targets file's targets (and the reference RAG at ``reference_url``)
    on one shared HTTP client, with the SelfCheck sampling of the settings, and the closer of
    both (httpx: proxies, private CAs, client certificates and HTTP/2 per target)."""
    from groundwatch.adapters.targets import make_http_client
    from groundwatch.stages.runner.factory import make_runner

    http = make_http_client(max_connections=max_connections)
    try:
        runner = make_runner(
            http,
            targets_file=targets_file,
            reference_url=reference_url,
            reference_concurrency=reference_concurrency,
            on_response=on_response,
            selfcheck=load_selfcheck_sampling(),
            on_stream=on_stream,
        )
    except BaseException:
        await http.aclose()
        raise

    async def close() -> None:
        await runner.aclose()
        await http.aclose()

    return runner, close


class CycleBook:
    """The store's record of a series' cycles: each is recorded ``running`` as it starts (the
    runs table), and finished or aborted by whoever waits for it; the generator's metrics see
    each start. The generator service and the embedded pipeline wire their generator to it."""

    def __init__(self, engine: Engine, on_started: Callable[[RunSummary], None]) -> None:
        self.engine = engine
        self._on_started = on_started
        #: cycles recorded as running and not finished yet: marked aborted if the run is cut
        self.open_runs: dict[str, RunSummary] = {}

    async def started(self, summary: RunSummary) -> None:
        from groundwatch.adapters.db.runs import record_cycle

        self.open_runs[summary.run_id] = summary
        self._on_started(summary)
        await asyncio.to_thread(
            record_cycle,
            self.engine,
            run_id=summary.run_id,
            series=summary.series,
            cycle=summary.cycle,
            dataset_id=summary.dataset_id,
            targets=summary.targets,
            started_at=summary.started_at,
        )

    async def finished(self, summary: RunSummary, status: str = "finished") -> None:
        from groundwatch.adapters.db.runs import finish_cycle

        await asyncio.to_thread(
            finish_cycle, self.engine, summary.run_id, probes=summary.probes, status=status
        )
        self.open_runs.pop(summary.run_id, None)

    async def abort_open(self) -> list[str]:
        """Mark the cycles recorded as running and not finished ``aborted``; their run ids."""
        aborted = list(self.open_runs.values())
        for summary in aborted:
            await self.finished(summary, "aborted")
        return [s.run_id for s in aborted]


def generator(
    bus: Bus,
    topics: Topics,
    groups: Sequence[SemanticGroup],
    targets: Sequence[str],
    engine: Engine,
    registry: CollectorRegistry,
    *,
    series: str | None = None,
    sample: int = 0,
    rate: float = 0.0,
    seed: int = 7,
    source_url: str | None = None,
    source_policy: SourcePolicy | None = None,
) -> tuple[GeneratorStage, CycleBook]:
    """The generator of a series over ``groups`` — the groups' SQL truth stored beside the
    judgements (:func:`store_dataset`), its cycles numbered on from the store's, each recorded
    there as it starts, its probes and answer changes counted in ``registry``, and the answers
    re-read from ``source_url`` every cycle when one is given — and the record of its cycles.
    The one wiring of the generator service and the embedded pipeline."""
    from groundwatch.adapters.db.runs import next_cycle, series_epoch
    from groundwatch.runtime.generator_telemetry import GeneratorTelemetry
    from groundwatch.runtime.refresh import answer_refresher
    from groundwatch.stages.generator.stage import GeneratorStage

    store_dataset(engine, groups)
    telemetry = GeneratorTelemetry(registry)
    book = CycleBook(engine, telemetry.started)
    series = series or (groups[0].dataset_id if groups else "default")
    stage = GeneratorStage(
        bus,
        topics,
        groups,
        list(targets),
        sample=sample,
        rate=rate,
        seed=seed,
        series=series,
        first_cycle=next_cycle(engine, series),
        epoch=series_epoch(engine, series),
        on_cycle=book.started,
        on_publish=telemetry.count,
        refresh=(
            answer_refresher(source_url, engine, telemetry.answers_changed, source_policy)
            if source_url
            else None
        ),
    )
    return stage, book


def analytics(
    engine: Engine,
    registry: CollectorRegistry,
    window: Window,
    *,
    quality: DataQualityChecker | None = None,
    specs: Mapping[str, GroupSpec] | None = None,
    open_domain_baseline: str | None = None,
    clock: SeriesClock | None = None,
    publish_views: bool = True,
) -> AnalyticsStage:
    """The analytics stage over the store at ``engine``, its tallies on ``registry`` (read from
    the view it publishes, never the live tagger). The one wiring of the analytics service and
    the embedded pipeline."""
    from groundwatch.adapters.db.analytics_store import AnalyticsStore
    from groundwatch.runtime.analytics_telemetry import AnalyticsTelemetry
    from groundwatch.stages.analytics.stage import AnalyticsStage

    made: list[AnalyticsStage] = []
    telemetry = AnalyticsTelemetry(
        registry,
        lambda: made[0].view,
        quality.results if quality is not None else None,
    )
    stage = AnalyticsStage(
        AnalyticsStore(engine),
        window=window,
        on_applied=telemetry.observe,
        quality=quality,
        specs=specs,
        open_domain_baseline=open_domain_baseline,
        clock=clock,
        publish_views=publish_views,
    )
    made.append(stage)
    return stage


def dead_letter_keeper(engine: Engine) -> DeadLetterKeeper:
    """The stage that copies the dead-letter topic into the store at ``engine`` (``groundwatch
    dead-letters`` lists it; the topic's retention would drop them)."""
    from groundwatch.adapters.db.dead_letters import DeadLetterStore
    from groundwatch.stages.dead_letters.stage import DeadLetterKeeper

    return DeadLetterKeeper(DeadLetterStore(engine))


def runner_stage(runner: Runner, *, batch: int | None = None) -> RunnerStage:
    """The stage that asks each probe to its target through ``runner``, ``batch`` probes a
    batch (the stage's default unless given)."""
    from groundwatch.stages.runner.stage import RunnerStage

    return RunnerStage(runner) if batch is None else RunnerStage(runner, batch=batch)


def store_dataset(engine: Engine, groups: Sequence[SemanticGroup]) -> None:
    """The schema at head and the dataset's SQL truth stored beside the judgements:
    ``groundwatch groups``/``show`` and ``/groups`` read it."""
    from groundwatch.adapters.db import create_schema
    from groundwatch.adapters.db.evidence import ensure_dataset_stored

    create_schema(engine)
    ensure_dataset_stored(engine, groups)


def llm_judge_spend(
    items: Iterable[tuple[str, Expected, str | None]], tiers: Sequence[str] | None
) -> tuple[int, int, str]:
    """What the LLM tier would cost on the answers the rules leave undecided: (calls, tokens,
    the prompt's version) — nothing is sent (``judge-agreement --dry-run``)."""
    from groundwatch.stages.judge.llm_tier import PROMPT_VERSION
    from groundwatch.stages.judge.tiered import estimate_llm_spend

    calls, tokens = estimate_llm_spend(items, tiers)
    return calls, tokens, PROMPT_VERSION


def start_tracing(service: str) -> Callable[[], Awaitable[None]]:
    """Trace probes and write verdicts onto spans as ``OTEL_*`` and ``GW_TRACE_*`` configure it
    (nothing, at no cost, when they configure nothing), for this process, until the returned
    stop is awaited: it sends what is queued within two seconds and drops the rest (counted).

    Call it before the runner and the analytics stage are built: they read it when made."""
    from groundwatch.adapters.tracing import TracingSettings, install
    from groundwatch.adapters.tracing import start_tracing as start

    try:
        tracing = start(service, settings=load_settings(TracingSettings))
    except ValueError as exc:
        from groundwatch.errors import ConfigError

        raise ConfigError(str(exc)) from exc
    install(tracing)

    async def stop() -> None:
        install(None)
        if tracing is not None:
            await asyncio.to_thread(tracing.shutdown, 2.0)

    return stop
