"""``groundwatch.evaluate``: the whole pipeline from Python, for notebooks and scripts.

.. code-block:: python

    import groundwatch

    report = groundwatch.evaluate("groups.jsonl", {"mine": my_rag})   # my_rag(question) -> answer
    report.failing_groups[0].forms[0].answer
    df = report.to_pandas()            # one row per asked form (pip install 'groundwatch[pandas]')

The same embedded pipeline as ``groundwatch run --once`` (generator, runner with its limits,
judge, analytics) runs on its own event loop — in a worker thread when the caller already has
one running, as a Jupyter kernel does — and the typed :class:`~groundwatch.report.document.Report`
comes back with every group's results (``Report.groups``), not only the failing ones.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from groundwatch.adapters.targets import CallableTarget, Target, TargetLimits
from groundwatch.adapters.targets.callable import TargetCallable
from groundwatch.core.evidence import DEFAULT_EVIDENCE, EvidenceRule
from groundwatch.core.model import SemanticGroup
from groundwatch.core.tagging import Window
from groundwatch.errors import ConfigError
from groundwatch.report.document import Report

T = TypeVar("T")

#: What ``targets`` may be: a targets file (YAML/TOML, as ``run --targets``), or a mapping of
#: name → a callable (question → answer text, or a mapping with ``answer``, ``retrieved_ids``,
#: ``contexts``) or an object with ``async ask(question)``.
Targets = str | Path | Mapping[str, TargetCallable | Target]


def evaluate(
    dataset: str | Path | Sequence[SemanticGroup],
    targets: Targets,
    *,
    runs: int = 1,
    sample: int = 0,
    database_url: str | None = None,
    series: str | None = None,
    window_runs: int = 1,
    evidence: EvidenceRule | None = None,
    compare: tuple[str, str] | None = None,
    concurrency: int = 8,
    timeout_s: float = 30.0,
    timeout_total_s: float = 3600.0,
) -> Report:
    """Probe ``targets`` with ``dataset`` (a ``groundwatch gen`` JSONL file or groups) ``runs``
    times and return the report with every group's results.

    ``database_url`` keeps the judgements (default: a temporary SQLite, removed afterwards);
    ``concurrency``/``timeout_s`` are the limits of callable targets (a targets file carries its
    own). Raises :class:`~groundwatch.errors.ConfigError` for a bad dataset or targets."""
    return _run_sync(
        lambda: evaluate_async(
            dataset,
            targets,
            runs=runs,
            sample=sample,
            database_url=database_url,
            series=series,
            window_runs=window_runs,
            evidence=evidence,
            compare=compare,
            concurrency=concurrency,
            timeout_s=timeout_s,
            timeout_total_s=timeout_total_s,
        )
    )


def _run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, even under a running loop (Jupyter)."""

    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="groundwatch") as pool:
        return pool.submit(asyncio.run, main()).result()


class TargetFailedWarning(UserWarning):
    """A target answered no probe at all: its report is errors only, not a measurement."""


def _warn_dead_targets(report: Report) -> None:
    """What ``groundwatch run`` exits 3 for, said from Python: a report of errors alone
    (Acc_db None, every group unknown) would otherwise pass for a result."""
    from groundwatch.report.groups import health_lines

    dead = {t: h for t, h in report.target_health.items() if h.all_failed}
    for line in health_lines(dead):
        warnings.warn(line, TargetFailedWarning, stacklevel=3)


async def evaluate_async(
    dataset: str | Path | Sequence[SemanticGroup],
    targets: Targets,
    *,
    runs: int = 1,
    sample: int = 0,
    database_url: str | None = None,
    series: str | None = None,
    window_runs: int = 1,
    evidence: EvidenceRule | None = None,
    compare: tuple[str, str] | None = None,
    concurrency: int = 8,
    timeout_s: float = 30.0,
    timeout_total_s: float = 3600.0,
) -> Report:
    """:func:`evaluate` for callers with their own event loop."""
    from groundwatch.adapters.targets import make_http_client
    from groundwatch.app.datasets import dataset_groups
    from groundwatch.app.embedded import EmbeddedPipeline
    from groundwatch.app.reports import tagger_report
    from groundwatch.stages.runner.factory import make_runner
    from groundwatch.stages.runner.lanes import Runner

    groups = dataset_groups(dataset)
    http = make_http_client(max_connections=256)
    closers: list[Callable[[], Awaitable[None]]] = [http.aclose]
    try:
        if isinstance(targets, str | Path):
            runner = make_runner(http, targets_file=Path(targets))
        else:
            if not targets:
                raise ConfigError("no targets given")
            built: dict[str, Target] = {
                name: t if isinstance(t, Target) else CallableTarget(t)
                for name, t in targets.items()
            }
            limits = TargetLimits(concurrency=concurrency, timeout_s=timeout_s)
            runner = Runner(built, dict.fromkeys(built, limits))
    except BaseException:
        await http.aclose()
        raise
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if database_url is None:
        tmp = tempfile.TemporaryDirectory(prefix="groundwatch-evaluate-")
        database_url = f"sqlite:///{Path(tmp.name) / 'groundwatch.db'}"
    pipeline = EmbeddedPipeline(
        groups,
        runner,
        database_url=database_url,
        sample=sample,
        series=series,
        window=Window(runs=window_runs or None, evidence=evidence or DEFAULT_EVIDENCE),
        on_stop=closers,
    )
    await pipeline.start()
    try:
        await pipeline.run(runs, timeout_s=timeout_total_s)
        report, every = tagger_report(
            pipeline.analytics.tagger,
            evidence=pipeline.evidence,
            compare=compare,
            with_groups=True,
            scenario=None,
        )
        _warn_dead_targets(report)
        return report.model_copy(update={"groups": every})
    finally:
        await pipeline.stop()
        if tmp is not None:
            tmp.cleanup()
