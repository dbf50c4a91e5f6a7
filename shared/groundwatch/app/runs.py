"""Running cycles in one process: ``groundwatch run`` over your dataset and targets, once (CI)
or continuously (``/metrics``, ``/groups``, ``/report`` served), on the embedded bus.

The use case builds the LLM plan, the judge, the runner and the data-quality check from
settings (:mod:`groundwatch.app.bootstrap`), runs the embedded pipeline and returns the typed
report (:func:`groundwatch.app.reports.tagger_report`). What it tells the person running it goes
through a :class:`Console` the entry point gives, so it prints nothing itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from groundwatch.errors import ConfigError, GroundwatchError

if TYPE_CHECKING:
    from groundwatch.app.embedded import EmbeddedResult
    from groundwatch.app.settings import TrafficSettings
    from groundwatch.core.compare import Side
    from groundwatch.core.model import SemanticGroup
    from groundwatch.core.tagging import Tagger
    from groundwatch.report.document import GroupResult, Report
    from groundwatch.report.gate import Rule

Progress = Callable[[int, int], None]


@contextlib.contextmanager
def _no_progress(_what: str) -> Iterator[Progress]:
    yield lambda _done, _total: None


@dataclass
class Console:
    """What a use case tells the person running it: notes (``say``: nothing under ``--quiet``),
    the result lines (``out``), warnings said even under ``--quiet`` (``warn``), and a progress
    bar (``progress(description)`` yields ``update(done, total)``)."""

    say: Callable[[str], None] = lambda _m: None
    out: Callable[[str], None] = lambda _m: None
    warn: Callable[[str], None] = lambda _m: None
    progress: Callable[[str], AbstractContextManager[Progress]] = _no_progress


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
    #: GW_API_TOKEN: continuous mode's ``POST /traffic`` needs it (closed without it)
    api_token: str | None = None
    corpus: Path | None = None
    mrc: bool = False
    source: str | None = None
    source_timeout_s: float = 60.0
    allow_privileged_source: bool = False
    max_llm_calls: int | None = None
    #: probes of the run that ended as dead letters (set by the run: ``--once`` exits 3)
    dead_letters: int = 0
    #: the side this run is compared with (``--baseline``): its dataset is checked first
    regression_baseline: Side | None = None
    #: the runs the cycles stored (set by the run)
    run_ids: list[str] = field(default_factory=list)


def check_source(
    source: str, groups: Sequence[SemanticGroup], timeout_s: float, allow_privileged: bool
) -> None:
    """A source that does not open, a login it refuses, SQL the read gate refuses, or another
    database than the dataset's: a ConfigError naming ``--source``."""
    from groundwatch.adapters.db.engine import check_database_url
    from groundwatch.adapters.sources.connect import SourcePolicy
    from groundwatch.runtime.refresh import check_source as check

    try:
        check(
            check_database_url(source, "--source"),
            list(groups),
            SourcePolicy(timeout_s, allow_privileged),
        )
    except GroundwatchError as exc:
        message = str(exc)
        raise ConfigError(
            message if message.startswith("--source") else f"--source: {message}"
        ) from None


def series_mix_warning(
    stored: set[str], series: str, groups: Sequence[SemanticGroup]
) -> str | None:
    """What to say when this run would continue a series built from another dataset.

    A series is named after the dataset id, and ``gen`` stamps ``default`` unless told
    otherwise: two different datasets run against one store would silently become cycles of
    one series, their tallies and transitions mixed. Fewer than half of either side's groups in
    common is not the same dataset regenerated; a warning, since it may be meant. ``stored``:
    the series' groups in the store."""
    if not stored:
        return None
    ours = {g.group_id for g in groups}
    common = len(stored & ours)
    if common * 2 >= min(len(stored), len(ours)):
        return None
    return (
        f"series {series!r} in this store already holds {len(stored)} groups, and"
        f" only {common} of this dataset's {len(ours)} are among them: this run continues"
        " that series with another dataset; give --series NAME (or gen --dataset-id) to keep"
        " them apart"
    )


async def _check_dataset(
    groups: Sequence[SemanticGroup],
    opts: RunOptions,
    stored: set[str],
    series: str,
    console: Console,
) -> None:
    """The dataset against the series the store holds (a warning when it is another dataset's)
    and against the source it came from (``--source``: a ConfigError when it is not that
    database)."""
    warning = series_mix_warning(stored, series, groups)
    if warning is not None:
        console.warn(warning)
    if opts.source is not None:
        check_source(opts.source, groups, opts.source_timeout_s, opts.allow_privileged_source)


def only_this_series(tagger: Tagger, series: str, targets: Sequence[str]) -> None:
    """Leave out of the report what the store held from other series or targets: the tagger
    reloads the whole store, and a shared store (the default file) must not make this run's
    report — and its CI gate — judge someone else's groups. The series' own earlier cycles stay
    (status windows, transitions, flakiness)."""
    # only the groups to leave out are held, decided by the last cohort listed, as before (a
    # map of every group to its snapshot was the run's peak: +15 MB at 500k probes, after the
    # cycle and before the report)
    out: set[tuple[str, str]] = set()
    for t in tagger.tallies():
        if t.series == series and t.target in targets:
            out.discard((t.target, t.group_id))
        else:
            out.add((t.target, t.group_id))
    for target, group_id in out:
        tagger.discard_group(target, group_id)


class CycleLine:
    """What a continuous run says after each cycle, in one line: the semantic groups by status
    (over every cohort; held = kept through cycles without answers), the regressions and
    recoveries since the previous line, and the target errors and undecided answers of the
    newest cycle — the operator's view of the live signal without opening /metrics."""

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
        answered = sum(h[2] for t, h in health.items() if t != baseline)
        errors = probed - answered
        undecided = sum(h[3] for t, h in health.items() if t != baseline)
        down = [t for t, h in sorted(health.items()) if t != baseline and h[1] and not h[2]]
        text = (
            f"gap {n['gap']}, non-robust {n['non_robust']}, flaky {n['flaky']},"
            f" unknown {n['unknown']}, robust {n['robust']}"
            + (f" (held {n['held']})" if n["held"] else "")
            + f"; regressions {moved['regression']}, recoveries {moved['recovery']};"
            f" target errors {errors} of {probed}"
            # answers the judge cannot place: how a silently broken endpoint shows
             + (f", undecided {undecided} of {answered} answers" if undecided else "")
        )
        if down:
            text += f" — {', '.join(down)} answered nothing: statuses held"
        return text


def dead_letter_line(count: int, errors: Sequence[str], database_url: str) -> str:
    """One line on probes that ended as dead letters: how many, the newest error, where kept."""
    from groundwatch.app.store import shown_url

    newest = f" (newest: {errors[-1]})" if errors else ""
    return (
        f"{count} probe{'s' if count != 1 else ''} not judged: dead-lettered{newest}; their"
        " groups stay pending, the messages are kept in the store: `groundwatch dead-letters"
        f" --database-url {shown_url(database_url)}`"
    )


async def run_cycles(
    dataset: Path,
    targets_file: Path,
    opts: RunOptions,
    console: Console,
    rules: Sequence[Rule] = (),
) -> tuple[Report, list[GroupResult] | None]:
    """Probe the targets of ``targets_file`` with the groups of ``dataset``: ``opts.runs``
    cycles with ``opts.once``, else every ``opts.interval`` seconds with the monitoring
    endpoints served until a signal; the report (with every group's rows when ``opts.junit``).

    What cannot run is a ConfigError before anything starts: a bad dataset, ``--compare`` or a
    threshold naming a cohort or target the run will not probe, a source that does not open or
    is another database than the dataset's."""
    from groundwatch.app.bootstrap import (
        data_quality_checker,
        file_runner,
        llm_plan,
        load_judge,
        sampled_targets,
        spend_of,
        start_tracing,
        target_names,
    )
    from groundwatch.app.datasets import load_dataset
    from groundwatch.app.embedded import EmbeddedPipeline, run_continuously
    from groundwatch.app.reports import tagger_report, unknown_name
    from groundwatch.app.store import open_store, shown_url
    from groundwatch.core.tagging import Window
    from groundwatch.report.gate import scope_errors
    from groundwatch.runtime.evidence_settings import evidence_rule

    groups = load_dataset(dataset)
    names = target_names(targets_file)
    cohorts = sorted({f.cohort for g in groups for f in g.forms})
    problems = [unknown_name("--compare", opts.compare, set(cohorts), "cohort")]
    problems += scope_errors(rules, dict.fromkeys(names, cohorts))
    if any(problems):
        raise ConfigError(next(p for p in problems if p))
    if opts.regression_baseline is not None:
        from groundwatch.app.compare import check_baseline_dataset, dataset_side_digest

        check_baseline_dataset(
            opts.regression_baseline,
            groups[0].dataset_id if groups else "",
            dataset_side_digest(groups),
        )
    series = opts.series or (groups[0].dataset_id if groups else "default")
    with open_store(opts.database_url, "--database-url") as store:
        stored = store.series_group_ids(series)
    await _check_dataset(groups, opts, stored, series, console)
    ledger, estimate = llm_plan(
        groups,
        len(names),
        cycles=opts.runs if opts.once else 1,
        sample=opts.sample,
        max_calls=opts.max_llm_calls,
        sampled_targets=sampled_targets(targets_file),
    )
    quality = (
        data_quality_checker(opts.corpus, "--corpus", mrc=opts.mrc, ledger=ledger)
        if opts.corpus is not None
        else None
    )
    judge = load_judge(opts.database_url, ledger=ledger)
    stop_tracing = start_tracing("groundwatch")
    runner, close = await file_runner(targets_file)
    if opts.baseline is not None and opts.baseline not in runner.targets:
        await close()
        await stop_tracing()
        raise ConfigError(
            f"--open-domain-baseline {opts.baseline!r} is not a target of {targets_file}"
            f" ({', '.join(runner.targets)})"
        )
    say = console.say
    say(f"{len(groups)} semantic groups; targets: {', '.join(runner.targets)}")
    if opts.source is not None:
        say(f"answers re-read every cycle from {shown_url(opts.source)}")
    say(judge.describe)
    for line in estimate.lines():
        say(line if opts.once else line.replace("this run", "per cycle"))
    from groundwatch.adapters.sources.connect import SourcePolicy

    traffic = _traffic_settings()
    pipeline = EmbeddedPipeline(
        groups,
        runner,
        judge=judge,
        data_quality=quality,
        open_domain_baseline=opts.baseline,
        database_url=opts.database_url,
        sample=opts.sample,
        on_stop=[close, stop_tracing],
        series=opts.series,
        window=Window(runs=opts.window_runs or None, evidence=evidence_rule()),
        source_url=opts.source,
        source_policy=SourcePolicy(opts.source_timeout_s, opts.allow_privileged_source),
        # --once serves nothing while it runs: the report reads the tagger after the cycles
        publish_views=not opts.once,
        # a continuous run grounds and judges the users' traffic it is sent (POST /traffic)
        traffic=not opts.once,
        traffic_sample=traffic.traffic_sample,
        traffic_pii=traffic.pii,
        traffic_limit=traffic.limit(),
    )
    await pipeline.start()

    def warn_dead_letters(result: EmbeddedResult) -> None:
        """Always said, also with ``--quiet``: part of the cycle went unjudged."""
        if result.dead_letters:
            console.warn(
                dead_letter_line(result.dead_letters, result.dead_letter_errors, opts.database_url)
            )

    try:
        if opts.once:
            first = pipeline.generator.next_cycle
            with console.progress("probing") as update:
                result = await pipeline.run(opts.runs, on_progress=update, timeout_s=opts.timeout_s)
            last = pipeline.generator.next_cycle - 1
            cycles = f"cycle {last}" if first == last else f"cycles {first}–{last}"
            console.out(
                f"series {series!r}, {cycles} (run {', '.join(result.run_ids)}):"
                f" {result.published} probes in {result.elapsed_s:.1f}s;"
                f" stored in {shown_url(opts.database_url)}"
            )
            opts.dead_letters = result.dead_letters
            opts.run_ids = list(result.run_ids)
            warn_dead_letters(result)
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
                warn_dead_letters(r)

            await run_continuously(
                pipeline,
                interval_s=opts.interval,
                host=opts.host,
                port=opts.port,
                on_cycle=on_cycle,
                read_token=opts.read_token,
                api_token=opts.api_token,
            )
        await pipeline.analytics.check_all_gaps()
        tagger = pipeline.analytics.tagger
        only_this_series(tagger, series, runner.targets)
        # with a baseline the tagger reports the closed domain, as /metrics does live
        report, all_groups = tagger_report(
            tagger,
            evidence=pipeline.evidence,
            compare=opts.compare,
            data_quality=quality.results() if quality is not None else None,
            spend=spend_of(ledger, estimate.model),
            with_groups=opts.junit,
        )
        if ledger.refused:  # said also with --quiet: part of the judging was not done
            console.warn(
                f"the LLM budget of {ledger.max_calls:,} calls is spent:"
                f" {ledger.refused:,} requests were not sent and what they would have decided"
                " stays undecided (--max-llm-calls / GW_LLM_BUDGET)"
            )
        if opts.baseline is not None:
            say(
                f"open-domain filter: {len(tagger.open_domain_groups())} groups answered by"
                f" {opts.baseline} without retrieval are left out of the report and the metrics"
            )
    finally:
        await pipeline.stop()
    return report, all_groups


def _traffic_settings() -> TrafficSettings:
    """``GW_TRAFFIC_*`` and ``GW_PII``, or a one-line error naming the variable."""
    from pydantic import ValidationError

    from groundwatch.app.settings import TrafficSettings

    try:
        return TrafficSettings()
    except ValidationError as e:
        first = e.errors()[0]
        name = "GW_" + "_".join(str(p) for p in first["loc"]).upper()
        raise ConfigError(f"{name}: {first['msg']}") from None
