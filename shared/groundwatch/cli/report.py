"""``groundwatch report``: the GRAMMAR group report from the store or from GRAMMAR result files.

The report itself is :mod:`groundwatch.report.build`'s; this module only gathers observations —
from the store (the latest cycle of a monitoring series by default, ``--run`` for given runs)
or from the authors' result files (``--grammar-results``) — and hands the report to the same
writer and CI gate as ``run`` (:mod:`groundwatch.cli.outputs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import EXIT_USAGE, DatabaseUrlOpt, check_named, fail, open_store
from groundwatch.cli.outputs import (
    FailUnderOpt,
    HtmlOpt,
    JsonFileOpt,
    JunitOpt,
    MaxOpt,
    finish,
    parse_rules,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from groundwatch.core.data_quality import GroupSpec, QualityResults
    from groundwatch.core.tagging import Observation, Tagger
    from groundwatch.report.model import Report


def _split(spec: str, what: str) -> tuple[str, str]:
    name, sep, value = spec.partition("=")
    if not sep or not name or not value:
        raise typer.BadParameter(f"expected {what}, got {spec!r}")
    return name.strip(), value.strip()


def _pair(spec: str | None, what: str) -> tuple[str, str] | None:
    if spec is None:
        return None
    parts = [p.strip() for p in spec.split(",")]
    if len(parts) != 2 or not all(parts):
        raise typer.BadParameter(f"expected {what} as A,B, got {spec!r}")
    return parts[0], parts[1]


def _grammar_observations(specs: Sequence[str], target: str) -> list[Observation]:
    from groundwatch.adapters.grammar_files import load_grammar_results

    out: list[Observation] = []
    for spec in specs:
        label, file = _split(spec, "[TARGET/]COHORT=FILE")
        t, slash, cohort = label.rpartition("/")
        out += load_grammar_results(file, cohort, t if slash else target)
    return out


def data_quality(
    tagger: Tagger, specs: dict[str, GroupSpec], corpus: Path, mrc: bool
) -> QualityResults:
    """Label the report's gap groups from ``corpus`` (GRAMMAR Appendix I); with ``mrc`` an LLM
    (``GW_LLM_*``) reads the documents for what BM25 does not find."""
    import asyncio

    from groundwatch.adapters.corpus_files import load_corpus
    from groundwatch.core.tagging import GroupStatus
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    reader = None
    if mrc:
        from groundwatch.adapters.llm.client import LlmClient, LlmSettings
        from groundwatch.reference_rag.llm_reader import LlmReader
        from groundwatch.runtime.settings import load_settings

        MRC = "--mrc (the reading-comprehension check)"

        reader = LlmReader(LlmClient(load_settings(LlmSettings).require(MRC))).read
    checker = DataQualityChecker(load_corpus(corpus, "--corpus"), reader=reader)
    gaps = sorted({t.group_id for t in tagger.tallies(status=GroupStatus.GAP)})
    asyncio.run(checker.check_many([specs[g] for g in gaps if g in specs]))
    return checker.results()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        grammar_results: Annotated[
            list[str] | None,
            typer.Option(
                "--grammar-results",
                "-g",
                help="[TARGET/]COHORT=FILE of a GRAMMAR result file; repeat per cohort.",
            ),
        ] = None,
        run: Annotated[
            list[str] | None,
            typer.Option("--run", "-r", help="Run id whose stored judgements to report."),
        ] = None,
        json_out: JsonFileOpt = None,
        html_out: HtmlOpt = None,
        junit: JunitOpt = None,
        fail_under: FailUnderOpt = None,
        maximum: MaxOpt = None,
        target: Annotated[
            str, typer.Option(help="Target name for imported result files.")
        ] = "grammar",
        compare: Annotated[
            str | None,
            typer.Option(help="Cohorts to test, ROBUST,NON_ROBUST (default: the first two)."),
        ] = None,
        compare_targets: Annotated[
            str | None,
            typer.Option(help="Targets to compare, BASELINE,CANDIDATE (default: when two)."),
        ] = None,
        ratings: Annotated[
            Path | None,
            typer.Option(help="CSV probe_id,rating[,metric…] of human 1–5 ratings (Spearman)."),
        ] = None,
        evaluator: Annotated[
            list[str] | None,
            typer.Option(help="NAME=CSV of a reference-free evaluator's verdicts."),
        ] = None,
        alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Significance level.")] = 0.05,
        database_url: DatabaseUrlOpt = None,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="Do not print the text report.")
        ] = False,
        series: Annotated[
            str | None,
            typer.Option(
                help="Monitoring series in the store (default: the most recently probed one)."
            ),
        ] = None,
        window_runs: Annotated[
            int,
            typer.Option(
                min=0,
                help="Each group's status over its last N cycles (1: the latest; 0 pools all).",
            ),
        ] = 1,
        corpus: Annotated[
            Path | None,
            typer.Option(
                help="Corpus of the system under test (JSON {doc_id: text} or a directory):"
                " label each gap group knowledge_gap / retrieval_or_reader (GRAMMAR App. I)."
            ),
        ] = None,
        mrc: Annotated[
            bool,
            typer.Option(
                "--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."
            ),
        ] = False,
        balance_seed: Annotated[
            int, typer.Option(help="Seed of the λ-balancing draw (reported).")
        ] = 0,
    ) -> None:
        """The GRAMMAR group report: Acc, Acc_db, R, λ, attribution and the cohort test.

        With neither --grammar-results nor --run, it reports the store's latest cycle of a
        monitoring series (statuses, coverage, transitions, flakiness), from --database-url.
        """
        from groundwatch.adapters.grammar_files import (
            ImportFormatError,
            load_evaluator_verdicts,
            load_grammar_specs,
            load_likert_ratings,
        )
        from groundwatch.core.tagging import Tagger, Window
        from groundwatch.errors import ConfigError
        from groundwatch.report.build import report_from_tagger

        grammar_results = grammar_results or []
        run = run or []
        evaluator = evaluator or []
        rules = parse_rules(fail_under, maximum)
        window: Window | None = None
        specs: dict[str, GroupSpec] = {}
        engine = None
        if run or not grammar_results:
            engine = open_store(database_url)
        try:
            observations = _grammar_observations(grammar_results, target)
            if corpus is not None and grammar_results:
                specs.update(
                    load_grammar_specs(_split(g, "COHORT=FILE")[1] for g in grammar_results)
                )
            if run and engine is not None:
                observations += _load_runs(engine, run)
                if corpus is not None:
                    specs.update(_load_specs(engine, run))
            if not grammar_results and not run and engine is not None:
                observations = _load_series(engine, series)
                window = Window(runs=window_runs or None)
                if corpus is not None:
                    runs = sorted({o.run_id for o in observations})
                    specs.update(_load_specs(engine, runs))
            evaluators = {
                name: load_evaluator_verdicts(file)
                for name, file in (_split(s, "NAME=FILE") for s in evaluator)
            }
            human, metrics = load_likert_ratings(ratings) if ratings else ({}, {})
            if human and engine is not None:
                _score_rated(engine, human, observations, metrics)
            if not observations:
                fail("no judgements found" + (f" for run {', '.join(run)}" if run else ""),
                     EXIT_USAGE)  # fmt: skip
            evidence = None
            if engine is not None:
                from groundwatch.adapters.db.evidence import StoreEvidence

                evidence = StoreEvidence(engine)
            pair, target_pair = _pair(compare, "cohorts"), _pair(compare_targets, "targets")
            check_named("--compare", pair, {o.cohort for o in observations}, "cohort")
            check_named(
                "--compare-targets", target_pair, {o.target for o in observations}, "target"
            )
            from groundwatch.runtime.evidence_settings import evidence_rule

            tagger = Tagger(window, evidence=evidence_rule())
            tagger.apply_many(observations)
            quality = data_quality(tagger, specs, corpus, mrc) if corpus is not None else None
            result = report_from_tagger(
                tagger,
                compare=pair,
                compare_targets=target_pair,
                evaluators=evaluators or None,
                human_ratings=human or None,
                metric_scores=metrics or None,
                alpha=alpha,
                balance_seed=balance_seed,
                data_quality=quality,
                evidence=evidence,
            )
            groups = None
            if junit is not None:
                from groundwatch.report.groups import group_results

                _, groups = group_results(tagger, evidence=evidence)
        except (ImportFormatError, OSError, ConfigError) as exc:
            if isinstance(exc, OSError) and exc.filename:
                fail(f"{exc.filename}: {exc.strerror or exc}", EXIT_USAGE)
            fail(str(exc), EXIT_USAGE)
        finally:
            if engine is not None:
                engine.dispose()
        code = finish(
            result,
            rules=rules,
            groups=groups,
            json_out=json_out,
            html_out=html_out,
            junit_out=junit,
            quiet=quiet,
            fail_on_dead_target=False,
        )
        raise typer.Exit(code)


def _score_rated(
    engine: Engine,
    ratings: Mapping[str, float],
    observations: Sequence[Observation],
    metrics: dict[str, dict[str, float]],
) -> None:
    """Semantic similarity and BERTScore of the rated answers the judge did not score (it
    scores a share, ``GW_SEMANTIC_SHARE``), from the answers and golds in the store, so the
    correlation covers every rated answer. Nothing when the embedding model is not installed
    or the metrics are off."""
    from sqlalchemy import select

    from groundwatch.adapters.db.models import JudgementRow
    from groundwatch.core.answer_metrics import gold_text
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
    with engine.connect() as conn:
        rows = conn.execute(
            select(JudgementRow.probe_id, JudgementRow.answer, JudgementRow.expected).where(
                JudgementRow.probe_id.in_(missing)
            )
        ).all()
    from groundwatch.core.semantic import bertscore

    for pid, answer, expected in rows:
        gold = gold_text((expected or {}).get("values") or [])
        if not answer or not gold:
            continue
        a, g = scorer.encoder.encode([answer, gold])
        metrics.setdefault(SEMANTIC_SIMILARITY, {})[str(pid)] = float(a.sentence @ g.sentence)
        metrics.setdefault(BERTSCORE_F1, {})[str(pid)] = bertscore(a.tokens, g.tokens)[2]


def _load_runs(engine: Engine, run_ids: Sequence[str]) -> list[Observation]:
    from sqlalchemy.orm import Session

    from groundwatch.adapters.db.observations import observations_for_runs

    with Session(engine) as session:
        return observations_for_runs(session, run_ids)


def _load_specs(engine: Engine, run_ids: Sequence[str]) -> dict[str, GroupSpec]:
    from sqlalchemy.orm import Session

    from groundwatch.adapters.db.observations import specs_for_runs

    with Session(engine) as session:
        return specs_for_runs(session, run_ids)


def _load_series(engine: Engine, series: str | None) -> list[Observation]:
    """The stored judgements of ``series`` (default: the latest probed), in cycle order."""
    from sqlalchemy.orm import Session

    from groundwatch.adapters.db.observations import observations_for_series
    from groundwatch.adapters.db.runs import latest_cycle

    latest = latest_cycle(engine, series)
    if latest is None:
        what = f"series {series!r}" if series else "monitoring cycles"
        fail(
            f"no {what} in the store; run `groundwatch run --once` first, or give"
            " --run/--grammar-results",
            EXIT_USAGE,
        )
    with Session(engine) as session:
        return observations_for_series(session, latest[0])


def report_json(result: Report) -> bytes:
    """The report as the CLI writes it (indented JSON)."""
    import orjson

    return orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2)
