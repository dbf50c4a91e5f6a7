"""``groundwatch run``: probe your own targets with your own dataset, in one process.

For batch use and CI (``--once``: N cycles, print the report, exit) and for a single-machine
continuous monitor (cycles every ``--interval`` seconds, ``/metrics``, ``/groups`` and
``/report`` served). The same workers as the Kafka services run on the embedded bus; to scale
out, run the services.

Judgements, the runs and the dataset's groups (SQL, parameters, answers) go to the store
(``--database-url``, else ``GW_DATABASE_URL``, else ``sqlite:///groundwatch.db``), where
``groundwatch groups``, ``show``, ``runs`` and ``report`` read them afterwards. With ``--once``
the exit code is the CI gate's (:mod:`groundwatch.cli.outputs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from groundwatch.cli.common import (
    EXIT_RUNTIME,
    EXIT_USAGE,
    AllowPrivilegedOpt,
    DatabaseUrlOpt,
    QuietOpt,
    SourceTimeoutOpt,
    check_named,
    fail,
    interactive,
    open_store,
    progress_bar,
    shown_url,
    store_url,
)
from groundwatch.cli.outputs import (
    FailUnderOpt,
    HtmlOpt,
    JsonFileOpt,
    JunitOpt,
    MaxLlmCallsOpt,
    MaxOpt,
    finish,
    parse_rules,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Engine

    from groundwatch.adapters.llm.client import LlmLedger
    from groundwatch.adapters.sources.connect import SourcePolicy
    from groundwatch.core.model import SemanticGroup
    from groundwatch.core.tagging import Tagger
    from groundwatch.report.gate import Rule
    from groundwatch.report.model import GroupResult, Report
    from groundwatch.runtime.embedded import EmbeddedResult
    from groundwatch.stages.analytics.data_quality import DataQualityChecker


@dataclass
class RunOptions:
    """Everything ``run`` was asked for, past the dataset and the targets file."""

    once: bool = True
    runs: int = 1
    sample: int = 0
    interval: float = 60.0
    host: str = "127.0.0.1"
    port: int = 8004
    database_url: str = ""
    compare: tuple[str, str] | None = None
    baseline: str | None = None
    series: str | None = None
    window_runs: int = 1
    quiet: bool = False
    junit: bool = False
    timeout_s: float = 3600.0
    notes: list[str] = field(default_factory=list)
    read_token: str | None = None
    corpus: Path | None = None
    mrc: bool = False
    source: str | None = None
    source_policy: SourcePolicy | None = None
    max_llm_calls: int | None = None
    #: probes of the run that ended as dead letters (set by the run: ``--once`` exits 3)
    dead_letters: int = 0


def _check_rule_scopes(
    rules: Sequence[Rule], targets: Sequence[str], groups: Sequence[SemanticGroup]
) -> None:
    """A threshold scoped to a target or cohort that this run will not probe is a typo: a usage
    error now (exit 2, with the closest name), not a broken gate after the whole run."""
    from groundwatch.report.gate import scope_errors

    cohorts = sorted({f.cohort for g in groups for f in g.forms})
    misnamed = scope_errors(rules, dict.fromkeys(targets, cohorts))
    if misnamed:
        fail(misnamed[0], EXIT_USAGE)


def load_dataset(path: Path) -> list[SemanticGroup]:
    """The dataset's groups, or a usage error (exit 2) saying what is wrong with the file."""
    from groundwatch.adapters.db.datasets import read_jsonl

    try:
        groups = read_jsonl(path)
    except (OSError, ValueError) as exc:
        fail(f"--dataset {path}: {' '.join(str(exc).split())[:300]}", EXIT_USAGE)
    if not groups:
        fail(
            f"--dataset {path}: no semantic groups in the file (is it the output of"
            " `groundwatch gen`?)",
            EXIT_USAGE,
        )
    return groups


async def _run(
    groups: list[SemanticGroup], targets_file: Path, opts: RunOptions
) -> tuple[Report, list[GroupResult] | None]:
    from groundwatch.adapters.targets import make_http_client
    from groundwatch.adapters.targets.config import can_sample, load_targets
    from groundwatch.core.tagging import Window
    from groundwatch.report.build import report_from_tagger
    from groundwatch.report.groups import group_results
    from groundwatch.runtime.embedded import EmbeddedPipeline, run_continuously
    from groundwatch.runtime.evidence_settings import evidence_rule
    from groundwatch.runtime.judging import llm_plan, load_judge, load_selfcheck_sampling, spend_of
    from groundwatch.stages.runner.factory import make_runner

    configs = load_targets(targets_file)
    ledger, estimate = llm_plan(
        groups,
        len(configs),
        cycles=opts.runs if opts.once else 1,
        sample=opts.sample,
        max_calls=opts.max_llm_calls,
        sampled_targets=sum(1 for c in configs if can_sample(c)),
    )
    quality = _data_quality(opts.corpus, opts.mrc, ledger) if opts.corpus is not None else None
    judge = load_judge(opts.database_url, ledger=ledger)
    http = make_http_client(max_connections=512)
    try:
        runner = make_runner(http, targets_file=targets_file, selfcheck=load_selfcheck_sampling())
    except BaseException:
        await http.aclose()
        raise
    if opts.baseline is not None and opts.baseline not in runner.targets:
        await runner.aclose()
        await http.aclose()
        fail(
            f"--open-domain-baseline {opts.baseline!r} is not a target of {targets_file}"
            f" ({', '.join(runner.targets)})",
            EXIT_USAGE,
        )

    def say(message: str) -> None:
        if not opts.quiet:
            typer.echo(message, err=True)

    say(f"{len(groups)} semantic groups; targets: {', '.join(runner.targets)}")
    if opts.source is not None:
        say(f"answers re-read every cycle from {shown_url(opts.source)}")
    say(judge.describe)
    for line in estimate.lines():
        say(line if opts.once else line.replace("this run", "per cycle"))
    pipeline = EmbeddedPipeline(
        groups,
        runner,
        judge=judge,
        data_quality=quality,
        open_domain_baseline=opts.baseline,
        database_url=opts.database_url,
        sample=opts.sample,
        on_stop=[http.aclose],
        series=opts.series,
        window=Window(runs=opts.window_runs or None, evidence=evidence_rule()),
        source_url=opts.source,
        source_policy=opts.source_policy,
    )
    await pipeline.start()
    _warn_if_series_mixes_datasets(pipeline.engine, pipeline.generator.series, groups)
    all_groups: list[GroupResult] | None = None
    try:
        if opts.once:
            first = pipeline.generator.next_cycle
            with progress_bar("probing", enabled=interactive(opts.quiet)) as update:
                result = await pipeline.run(opts.runs, on_progress=update, timeout_s=opts.timeout_s)
            last = pipeline.generator.next_cycle - 1
            cycles = f"cycle {last}" if first == last else f"cycles {first}–{last}"
            typer.echo(
                f"series {pipeline.generator.series!r}, {cycles} (run {', '.join(result.run_ids)}):"
                f" {result.published} probes in {result.elapsed_s:.1f}s;"
                f" stored in {shown_url(opts.database_url)}"
            )
            opts.dead_letters = result.dead_letters
            _warn_dead_letters(result, opts.database_url)
        else:
            say(
                f"probing every {opts.interval:g}s; http://{opts.host}:{opts.port}/metrics,"
                f" /groups, /report.html (Ctrl-C to stop); stored in"
                f" {shown_url(opts.database_url)}"
            )

            per_cycle = CycleLine()

            def on_cycle(r: EmbeddedResult) -> None:
                say(
                    f"cycle {', '.join(map(str, r.cycles))} (run {', '.join(r.run_ids)}):"
                    f" {r.published} probes in {r.elapsed_s:.1f}s — "
                    + per_cycle.after(pipeline.analytics.tagger)
                )
                _warn_dead_letters(r, opts.database_url)

            await run_continuously(
                pipeline,
                interval_s=opts.interval,
                host=opts.host,
                port=opts.port,
                on_cycle=on_cycle,
                read_token=opts.read_token,
            )
        await pipeline.analytics.check_all_gaps()
        results = quality.results() if quality is not None else None
        tagger = pipeline.analytics.tagger
        _only_this_series(tagger, pipeline.generator.series, runner.targets)
        evidence = pipeline.evidence
        tagger.refresh_causes()
        # with a baseline the tagger reports the closed domain, as /metrics does live
        report = report_from_tagger(
            tagger, compare=opts.compare, evidence=evidence, data_quality=results
        )
        spend = spend_of(ledger, estimate.model)
        if spend is not None:
            report = report.model_copy(update={"llm_spend": spend})
            if ledger.refused:  # said also with --quiet: part of the judging was not done
                typer.echo(
                    f"warning: the LLM budget of {ledger.max_calls:,} calls is spent:"
                    f" {ledger.refused:,} requests were not sent and what they would have decided"
                    " stays undecided (--max-llm-calls / GW_LLM_BUDGET)",
                    err=True,
                )
        if opts.junit:
            _, all_groups = group_results(tagger, evidence=evidence)
        if opts.baseline is not None:
            say(
                f"open-domain filter: {len(tagger.open_domain_groups())} groups answered by"
                f" {opts.baseline} without retrieval are left out of the report and the metrics"
            )
    finally:
        await pipeline.stop()
    return report, all_groups


class CycleLine:
    """What a continuous run says after each cycle, in one line: the semantic groups by status
    (over every cohort; stale = kept through cycles without evidence), the regressions and
    recoveries since the previous line, and the target errors of the newest cycle — the
    operator's view of the live signal without opening /metrics."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[str, str, str], int] = {}

    def after(self, tagger: Tagger) -> str:
        from groundwatch.report.groups import status_summary

        n = status_summary(tagger)
        kinds = tagger.transition_kinds()
        moved = {
            kind: sum(v - self._kinds.get(k, 0) for k, v in kinds.items() if k[2] == kind)
            for kind in ("regression", "recovery")
        }
        self._kinds = kinds
        health = tagger.target_health()
        baseline = tagger.open_domain_baseline
        probed = sum(h[1] for t, h in health.items() if t != baseline)
        errors = probed - sum(h[2] for t, h in health.items() if t != baseline)
        down = [t for t, h in sorted(health.items()) if t != baseline and h[1] and not h[2]]
        text = (
            f"gap {n['gap']}, non-robust {n['non_robust']}, flaky {n['flaky']},"
            f" unknown {n['unknown']}, robust {n['robust']}"
            + (f" (stale {n['stale']})" if n["stale"] else "")
            + f"; regressions {moved['regression']}, recoveries {moved['recovery']};"
            f" target errors {errors} of {probed}"
        )
        if down:
            text += f" — {', '.join(down)} answered nothing: statuses kept, stale"
        return text


def dead_letter_line(count: int, errors: Sequence[str], database_url: str) -> str:
    """One line on probes that ended as dead letters: how many, the newest error, where kept."""
    newest = f" (newest: {errors[-1]})" if errors else ""
    return (
        f"{count} probe{'s' if count != 1 else ''} not judged: dead-lettered{newest}; their"
        " groups stay pending, the messages are kept in the store: `groundwatch dead-letters"
        f" --database-url {shown_url(database_url)}`"
    )


def _warn_dead_letters(result: EmbeddedResult, database_url: str) -> None:
    """Always said, also with ``--quiet``: part of the cycle went unjudged."""
    if result.dead_letters:
        typer.echo(
            "warning: "
            + dead_letter_line(result.dead_letters, result.dead_letter_errors, database_url),
            err=True,
        )


def _data_quality(corpus: Path, mrc: bool, ledger: LlmLedger | None = None) -> DataQualityChecker:
    """The gap groups' data-quality check over ``corpus``; with ``mrc``, the LLM configured by
    ``GW_LLM_*`` reads the best documents for what BM25 does not find."""
    from groundwatch.adapters.corpus_files import load_corpus
    from groundwatch.stages.analytics.data_quality import DataQualityChecker

    documents = load_corpus(corpus, "--corpus")
    if not mrc:
        return DataQualityChecker(documents)
    from groundwatch.adapters.llm.client import LlmClient, LlmSettings
    from groundwatch.reference_rag.llm_reader import LlmReader
    from groundwatch.runtime.settings import load_settings

    MRC = "--mrc (the reading-comprehension check)"
    return DataQualityChecker(
        documents,
        reader=LlmReader(LlmClient(load_settings(LlmSettings).require(MRC), ledger=ledger)).read,
    )


def _check_source(source: str, groups: list[SemanticGroup], policy: SourcePolicy) -> None:
    """A source that does not open, a login it refuses, SQL the read gate refuses, or another
    database than the dataset's: one line, exit 2."""
    from groundwatch.adapters.db.engine import check_database_url
    from groundwatch.errors import GroundwatchError
    from groundwatch.runtime.refresh import check_source

    try:
        check_source(check_database_url(source, "--source"), groups, policy)
    except GroundwatchError as exc:
        message = str(exc)
        fail(message if message.startswith("--source") else f"--source: {message}", EXIT_USAGE)


def _check_port_free(host: str, port: int) -> None:
    """Continuous mode serves /metrics: a port already taken is a usage error named up front,
    before any probing (uvicorn would log it after the first banner and exit 3)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        fail(f"--host {host}: {exc.strerror or exc}", EXIT_USAGE)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            fail(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})", EXIT_USAGE
            )


def _warn_if_series_mixes_datasets(
    engine: Engine, series: str, groups: Sequence[SemanticGroup]
) -> None:
    """Say so when this run would continue a series built from another dataset.

    A series is named after the dataset id, and ``gen`` stamps ``default`` unless told
    otherwise: two different datasets run against one store would silently become cycles of
    one series, their tallies and transitions mixed. Fewer than half of either side's groups in
    common is not the same dataset regenerated; a warning, since it may be meant."""
    from groundwatch.adapters.db.runs import series_group_ids

    stored = series_group_ids(engine, series)
    if not stored:
        return
    ours = {g.group_id for g in groups}
    common = len(stored & ours)
    if common * 2 < min(len(stored), len(ours)):
        typer.echo(
            f"warning: series {series!r} in this store already holds {len(stored)} groups, and"
            f" only {common} of this dataset's {len(ours)} are among them: this run continues"
            " that series with another dataset; give --series NAME (or gen --dataset-id) to keep"
            " them apart",
            err=True,
        )


def _only_this_series(tagger: Tagger, series: str, targets: list[str]) -> None:
    """Leave out of the report what the store held from other series or targets: the tagger
    reloads the whole store, and a shared store (the default file) must not make this run's
    report — and its CI gate — judge someone else's groups. The series' own earlier cycles stay
    (status windows, transitions, flakiness)."""
    every = {(t.target, t.group_id): t for t in tagger.tallies()}
    keep = {k for k, t in every.items() if t.series == series and t.target in targets}
    for target, group_id in set(every) - keep:
        tagger.discard_group(target, group_id)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        dataset: Annotated[
            Path, typer.Option(help="Dataset JSONL from `groundwatch gen`.", exists=True)
        ],
        targets: Annotated[
            Path,
            typer.Option(
                help="Targets file (YAML/TOML): http_json, openai_chat, callable.", exists=True
            ),
        ],
        once: Annotated[
            bool, typer.Option("--once", help="Run --runs cycles, report, exit (CI).")
        ] = False,
        runs: Annotated[int, typer.Option(min=1, help="Cycles with --once.")] = 1,
        sample: Annotated[int, typer.Option(min=0, help="Groups per cycle (0 = all).")] = 0,
        interval: Annotated[
            float, typer.Option(min=0, help="Seconds between cycles (continuous).")
        ] = 60.0,
        host: Annotated[str, typer.Option(help="Bind address (continuous).")] = "127.0.0.1",
        port: Annotated[
            int,
            typer.Option(
                min=1, max=65535, help="Port of /metrics, /groups and /report (continuous)."
            ),
        ] = 8004,
        database_url: DatabaseUrlOpt = None,
        compare: Annotated[
            str | None, typer.Option(help="Two cohorts to test, e.g. short,long.")
        ] = None,
        json_out: JsonFileOpt = None,
        html_out: HtmlOpt = None,
        junit: JunitOpt = None,
        fail_under: FailUnderOpt = None,
        maximum: MaxOpt = None,
        series: Annotated[
            str | None,
            typer.Option(
                help="Monitoring series (default: the dataset's id). Runs with the same"
                " --database-url and series are consecutive cycles of one series."
            ),
        ] = None,
        window_runs: Annotated[
            int,
            typer.Option(
                min=0,
                help="A group's status is over its last N cycles (1: the latest; 0 pools all).",
            ),
        ] = 1,
        open_domain_baseline: Annotated[
            str | None,
            typer.Option(
                help="Target (e.g. an openai_chat LLM-only baseline) whose correctly answered "
                "groups are flagged open-domain and left out of the report (GRAMMAR §5.2)."
            ),
        ] = None,
        timeout: Annotated[
            float, typer.Option(min=1.0, help="Give up on a cycle after this many seconds.")
        ] = 3600.0,
        quiet: QuietOpt = False,
        read_token: Annotated[
            str | None,
            typer.Option(
                envvar="GW_API_READ_TOKEN",
                help="Bearer token for /groups and /report (continuous); unset: open.",
                show_default=False,
            ),
        ] = None,
        corpus: Annotated[
            Path | None,
            typer.Option(
                help="Corpus your RAG answers from (JSON {doc_id: text} or a directory): label"
                " each gap group knowledge_gap / retrieval_or_reader (GRAMMAR Appendix I).",
            ),
        ] = None,
        mrc: Annotated[
            bool,
            typer.Option(
                "--mrc", help="With --corpus: an LLM (GW_LLM_*) reads what BM25 does not find."
            ),
        ] = False,
        source: Annotated[
            str | None,
            typer.Option(
                envvar="GW_SOURCE_URL",
                help="Source database (SQLAlchemy URL, opened read-only) the dataset came from:"
                " each cycle re-reads its answers, so a changed fact is a new answer version and"
                " an answer giving the old value is stale, not a gap. Unset: the dataset's"
                " answers stay as generated.",
                show_default=False,
            ),
        ] = None,
        allow_privileged_source: AllowPrivilegedOpt = False,
        source_timeout: SourceTimeoutOpt = 60.0,
        max_llm_calls: MaxLlmCallsOpt = None,
    ) -> None:
        """Probe targets with a dataset on the embedded bus: once (CI) or continuously.

        Judged by the rules, and by the LLM tier when GW_JUDGE_LLM_ENABLED and GW_LLM_* are set
        (GW_REFERENCE_FREE adds RAGAS-Fact/SelfCheck); the first lines say which judge runs.

        Exit codes with --once: 0 ok; 1 a --fail-under/--max threshold broken; 2 usage or
        configuration error; 3 a target answered no probe at all (the first error is printed),
        or probes were dead-lettered (not judged: `groundwatch dead-letters` lists them).
        """
        pair = None
        if compare:
            a, _, b = compare.partition(",")
            if not a or not b:
                raise typer.BadParameter("expected two cohorts as A,B", param_hint="--compare")
            pair = (a.strip(), b.strip())
        rules = parse_rules(fail_under, maximum)
        if (rules or junit) and not once:
            raise typer.BadParameter("thresholds and --junit go with --once")
        from groundwatch.adapters.targets.config import load_targets

        configs = load_targets(targets)  # a bad targets file stops here, naming the field
        url, _ = store_url(database_url)
        open_store(database_url, create=True).dispose()  # a bad URL stops here, exit 2
        groups = load_dataset(dataset)
        check_named("--compare", pair, {f.cohort for g in groups for f in g.forms}, "cohort")
        from groundwatch.adapters.sources.connect import SourcePolicy

        policy = SourcePolicy(source_timeout, allow_privileged_source)
        _check_rule_scopes(rules, [c.name for c in configs], groups)
        if source is not None:
            _check_source(source, groups, policy)
        if not once:
            _check_port_free(host, port)
        opts = RunOptions(
            once=once,
            runs=runs,
            sample=sample,
            interval=interval,
            host=host,
            port=port,
            database_url=url,
            compare=pair,
            baseline=open_domain_baseline,
            series=series,
            window_runs=window_runs,
            quiet=quiet,
            junit=junit is not None,
            timeout_s=timeout,
            read_token=read_token,
            corpus=corpus,
            mrc=mrc,
            source=source,
            source_policy=policy,
            max_llm_calls=max_llm_calls,
        )
        try:
            from groundwatch.runtime.loop import run as run_on_loop

            # GW_EVENT_LOOP: uvloop when installed (a bad value is a usage error, exit 2)
            report, all_groups = run_on_loop(_run(groups, targets, opts))
        except KeyboardInterrupt:
            # --once cut short, or a continuous run's second signal: not a finished run (the
            # first SIGINT/SIGTERM of a continuous run ends it normally, exit 0)
            fail("interrupted: the cycle in flight is recorded as aborted", 130)
        except TimeoutError as exc:
            fail(f"{exc} (--timeout {timeout:g}s)")
        if not once and not report.targets and not report.scenarios:
            # stopped by a signal before a cycle finished: nothing to report, and no failure
            typer.echo("stopped before any cycle finished: no report", err=True)
            raise typer.Exit(0)
        code = finish(
            report,
            rules=rules,
            groups=all_groups,
            json_out=json_out,
            html_out=html_out,
            junit_out=junit,
            quiet=quiet,
        )
        if opts.dead_letters and code != EXIT_RUNTIME:
            # the outputs are written; the gate must not pass on a partly judged run
            fail("the report is incomplete: " + dead_letter_line(opts.dead_letters, [], url))
        raise typer.Exit(code)
