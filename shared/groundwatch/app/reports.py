"""Replaying judgements into the typed report: from the store (a series' latest window, or given
runs), from GRAMMAR's result files, or from a pipeline that has just run.

Every report a person reads — ``groundwatch report``, ``run --once``, ``demo``,
``groundwatch.evaluate`` — is made by :func:`tagger_report`: the gap groups' causes refreshed, the
report built with the store's texts and the data-quality labels, the LLM spend added, and every
group's rows when a JUnit file or ``Report.groups`` wants them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from groundwatch.errors import ConfigError

if TYPE_CHECKING:
    from groundwatch.adapters.llm.client import LlmLedger
    from groundwatch.app.store import Store
    from groundwatch.core.data_quality import GroupSpec, QualityResults
    from groundwatch.core.tagging import Observation, Tagger
    from groundwatch.report.document import GroupResult, LlmSpend, Report
    from groundwatch.report.groups import Evidence


def unknown_name(
    option: str, names: tuple[str, str] | None, known: set[str], what: str
) -> str | None:
    """Why ``option`` is wrong when it names a cohort or target the data does not have (None
    when it is right): a typo would otherwise print "no observations" and a CI gate pass."""
    if names is None:
        return None
    missing = [n for n in names if n not in known]
    if not missing:
        return None
    return (
        f"{option}: no {what} {missing[0]!r} in these judgements; {what}s:"
        f" {', '.join(sorted(known)) or 'none'}"
    )


def _check_named(option: str, names: tuple[str, str] | None, known: set[str], what: str) -> None:
    problem = unknown_name(option, names, known, what)
    if problem is not None:
        raise ConfigError(problem)


@dataclass(frozen=True)
class GrammarFile:
    """One GRAMMAR result file: the target and cohort its verdicts are of."""

    target: str
    cohort: str
    path: str


@dataclass
class ReportRequest:
    """What ``groundwatch report`` was asked for."""

    grammar_files: list[GrammarFile] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    series: str | None = None
    window_runs: int = 1
    compare: tuple[str, str] | None = None
    compare_targets: tuple[str, str] | None = None
    evaluators: list[tuple[str, str]] = field(default_factory=list)
    ratings: Path | None = None
    alpha: float = 0.05
    balance_seed: int = 0
    corpus: Path | None = None
    mrc: bool = False
    with_groups: bool = False

    @property
    def reads_store(self) -> bool:
        """Given runs, or no result files: the report is of the store's judgements."""
        return bool(self.runs) or not self.grammar_files


def stored_report(
    request: ReportRequest, store: Store | None
) -> tuple[Report, list[GroupResult] | None]:
    """The GRAMMAR report of ``request`` — over GRAMMAR result files, the store's given runs, or
    (neither) the store's latest window of a monitoring series — and every group's rows when
    ``request.with_groups``. Nothing to report, a misnamed cohort or target, an unreadable file:
    :class:`ConfigError` (exit 2)."""
    from groundwatch.adapters.grammar_files import (
        load_evaluator_verdicts,
        load_grammar_results,
        load_grammar_specs,
        load_likert_ratings,
    )
    from groundwatch.app.store import NothingStored
    from groundwatch.core.tagging import Tagger, Window
    from groundwatch.runtime.evidence_settings import evidence_rule

    try:
        observations: list[Observation] = []
        for f in request.grammar_files:
            observations += load_grammar_results(f.path, f.cohort, f.target)
        specs: dict[str, GroupSpec] = {}
        window: Window | None = None
        if request.corpus is not None and request.grammar_files:
            specs.update(load_grammar_specs(f.path for f in request.grammar_files))
        if request.runs and store is not None:
            observations += store.observations_for_runs(request.runs)
            if request.corpus is not None:
                specs.update(store.specs_for_runs(request.runs))
        if not request.grammar_files and not request.runs and store is not None:
            try:
                _, observations = store.latest_series(request.series)
            except NothingStored as exc:
                raise ConfigError(
                    f"{exc}; run `groundwatch run --once` first, or give --run/--grammar-results"
                ) from None
            window = Window(runs=request.window_runs or None)
            if request.corpus is not None:
                specs.update(store.specs_for_runs(sorted({o.run_id for o in observations})))
        evaluators = {name: load_evaluator_verdicts(file) for name, file in request.evaluators}
        human, metrics = load_likert_ratings(request.ratings) if request.ratings else ({}, {})
        if human and store is not None:
            score_rated(store, human, observations, metrics)
        if not observations:
            runs = f" for run {', '.join(request.runs)}" if request.runs else ""
            raise ConfigError(f"no judgements found{runs}")
        _check_named("--compare", request.compare, {o.cohort for o in observations}, "cohort")
        _check_named(
            "--compare-targets", request.compare_targets, {o.target for o in observations}, "target"
        )
        tagger = Tagger(window, evidence=evidence_rule())
        tagger.apply_many(observations)
        quality = (
            gap_quality(tagger, specs, request.corpus, request.mrc)
            if request.corpus is not None
            else None
        )
        from groundwatch.report.build import report_from_tagger
        from groundwatch.runtime.allocator import release_free_memory

        evidence = store.evidence() if store is not None else None
        report = report_from_tagger(
            tagger,
            compare=request.compare,
            compare_targets=request.compare_targets,
            evaluators=evaluators or None,
            human_ratings=human or None,
            metric_scores=metrics or None,
            alpha=request.alpha,
            balance_seed=request.balance_seed,
            data_quality=quality,
            evidence=evidence,
            after_pass=release_free_memory,
        )
        groups = None
        if request.with_groups:
            from groundwatch.report.groups import group_results

            _, groups = group_results(tagger, evidence=evidence)
        return report, groups
    except OSError as exc:
        if exc.filename:
            raise ConfigError(f"{exc.filename}: {exc.strerror or exc}") from None
        raise ConfigError(str(exc)) from None


def gap_quality(
    tagger: Tagger, specs: dict[str, GroupSpec], corpus: Path, mrc: bool
) -> QualityResults:
    """Label the report's gap groups from ``corpus`` (GRAMMAR Appendix I); with ``mrc`` an LLM
    (``GW_LLM_*``) reads the documents for what BM25 does not find."""
    from groundwatch.app.bootstrap import data_quality_checker
    from groundwatch.core.tagging import GroupStatus

    checker = data_quality_checker(corpus, "--corpus", mrc=mrc)
    gaps = sorted({t.group_id for t in tagger.tallies(status=GroupStatus.GAP)})
    asyncio.run(checker.check_many([specs[g] for g in gaps if g in specs]))
    return checker.results()


def score_rated(
    store: Store,
    ratings: Mapping[str, float],
    observations: Sequence[Observation],
    metrics: dict[str, dict[str, float]],
) -> None:
    """Semantic similarity and BERTScore of the rated answers the judge did not score (it
    scores a share, ``GW_SEMANTIC_SHARE``), from the answers and golds in the store, so the
    correlation covers every rated answer. Nothing when the embedding model is not installed
    or the metrics are off."""
    from groundwatch.core.answer_scoring import gold_text
    from groundwatch.core.semantic import bertscore
    from groundwatch.runtime.settings import load_settings
    from groundwatch.stages.judge.semantic import (
        BERTSCORE_F1,
        SEMANTIC_SIMILARITY,
        SemanticSettings,
        build_semantic,
    )

    settings = load_settings(SemanticSettings, llm_metrics=[])
    scorer = build_semantic(settings)
    if scorer is None or scorer.encoder is None or settings.semantic_metrics == "off":
        return
    scored = {
        o.probe_id
        for o in observations
        if o.scores.semantic is not None and o.scores.semantic.similarity is not None
    }
    missing = [pid for pid in ratings if pid not in scored]
    for pid, answer, expected in store.answers(missing):
        gold = gold_text((expected or {}).get("values") or [])
        if not answer or not gold:
            continue
        a, g = scorer.encoder.encode([answer, gold])
        metrics.setdefault(SEMANTIC_SIMILARITY, {})[pid] = float(a.sentence @ g.sentence)
        metrics.setdefault(BERTSCORE_F1, {})[pid] = bertscore(a.tokens, g.tokens)[2]


def tagger_report(
    tagger: Tagger,
    *,
    evidence: Evidence | None = None,
    compare: tuple[str, str] | None = None,
    data_quality: QualityResults | None = None,
    spend: LlmSpend | None = None,
    with_groups: bool = False,
    scenario: str | None = "factual",
) -> tuple[Report, list[GroupResult] | None]:
    """The report of a pipeline that has just run: the gap groups' causes refreshed, the report
    over the tagger's window with the store's texts (``evidence``) and the gap groups'
    data-quality labels, the LLM spend beside it, and every group's rows when ``with_groups``
    (of ``scenario``: ``factual`` the GRAMMAR groups, None every probe's).
    A tagger with an open-domain baseline reports the closed domain, as ``/metrics`` does."""
    from groundwatch.report.build import report_from_tagger
    from groundwatch.report.groups import group_results
    from groundwatch.runtime.allocator import release_free_memory

    release_free_memory()  # the cycle's holes back to the system before the report's burst
    tagger.refresh_causes()
    report = report_from_tagger(
        tagger,
        compare=compare,
        evidence=evidence,
        data_quality=data_quality,
        after_pass=release_free_memory,  # each pass's holes back too, before the next one
    )
    if spend is not None:
        report = report.model_copy(update={"llm_spend": spend})
    groups = group_results(tagger, scenario=scenario, evidence=evidence)[1] if with_groups else None
    return report, groups


def ledger_spend(ledger: LlmLedger, model: str) -> LlmSpend | None:
    """The report's LLM-spend section from a run's ledger (None when nothing was asked)."""
    from groundwatch.app.bootstrap import spend_of

    return spend_of(ledger, model)
