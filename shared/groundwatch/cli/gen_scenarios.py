"""``groundwatch gen --scenarios …``: RAGProbe scenario items as JSONL, with a scenario report.

``--demo`` or ``--db URL`` build the grounded variants with SQL truth (no LLM; with ``--corpus``
or the demo's documents, answers are checked against the corpus and absent names against every
document). ``--corpus DIR`` without a database, or ``--llm``, runs RAGProbe's own generator over
the corpus through the LLM client (``GW_LLM_*``). Every line of the output is a semantic group
whose ``scenario`` is S1…S6 and whose ``provenance`` says what it was made from; the scenario
report (kept / dropped by reason / validity by retrieval) is printed and, with
``--scenario-report FILE``, written as JSON.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from groundwatch.adapters.scenario_files import builtin_scenarios, load_scenarios, select_scenarios
from groundwatch.cli.common import EXIT_USAGE, fail
from groundwatch.core.scenarios.items import ScenarioRun
from groundwatch.core.scenarios.spec import ScenarioSpec
from groundwatch.core.scenarios.validity import scenario_report
from groundwatch.errors import GroundwatchError

if TYPE_CHECKING:
    from groundwatch.adapters.sources.connect import SourcePolicy

console = Console(stderr=True)


def scenario_table(report: Mapping[str, Any]) -> Table:
    t = Table(title="RAGProbe scenarios: kept, dropped, valid", show_header=True)
    for col in ("scenario", "attempted", "kept", "dropped", "dropped by reason", "validity"):
        t.add_column(col, justify="left" if col in ("scenario", "dropped by reason") else "right")
    for sid, s in report["scenarios"].items():
        v = s.get("validity") or {}
        valid = (
            f"{v['validity']:.2f} ({v['valid']}/{v['checked']})"
            if v.get("validity") is not None
            else "–"
        )
        reasons = ", ".join(f"{k} {n}" for k, n in s["dropped_by_reason"].items()) or "–"
        t.add_row(sid, str(s["attempted"]), str(s["kept"]), str(s["dropped"]), reasons, valid)
    return t


async def _llm_run(
    corpus: Mapping[str, str], specs: Sequence[ScenarioSpec], seed: int, dataset_id: str,
    max_items: int | None,
) -> ScenarioRun:  # fmt: skip
    from groundwatch.adapters.llm.client import LlmClient, LlmSettings
    from groundwatch.core.scenarios.generate import CorpusScenarioGenerator
    from groundwatch.runtime.settings import load_settings

    settings = load_settings(LlmSettings).require(
        "gen --scenarios over a corpus (RAGProbe's generator)"
    )
    client = LlmClient(settings)
    try:
        gen = CorpusScenarioGenerator(
            client, corpus, seed=seed, dataset_id=dataset_id, model=settings.model
        )
        with console.status("asking the LLM for scenario items…"):
            return await gen.generate(specs, max_items=max_items)
    finally:
        await client.aclose()


def gen_scenarios(
    wanted: str,
    *,
    demo: bool,
    db: str | None,
    corpus_path: Path | None,
    out: Path | None,
    llm: bool,
    seed: int,
    dataset_id: str,
    max_items: int | None,
    report_out: Path | None,
    scenario_paths: Sequence[Path] = (),
    policy: SourcePolicy | None = None,
) -> ScenarioRun:
    """The ``gen --scenarios`` command body; returns the run (for tests and callers)."""
    if demo == (db is not None or corpus_path is not None):
        raise typer.BadParameter("give --demo, or --corpus DIR and/or --db URL, with --scenarios")
    if out is None:
        raise typer.BadParameter("--out is required")
    try:
        available = builtin_scenarios()
        if scenario_paths:
            available.update(load_scenarios(scenario_paths))
        specs = select_scenarios(wanted, available)
        with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as workdir:
            corpus: dict[str, str] | None = None
            url = db
            if demo:
                from groundwatch.demo import build_demo

                domain = build_demo(seed=seed, workdir=workdir)
                url, corpus = domain.db_url, domain.documents
            elif corpus_path is not None:
                from groundwatch.adapters.sources.scenarios import load_corpus

                corpus = load_corpus(corpus_path)
            if llm or url is None:
                if corpus is None:
                    raise typer.BadParameter("the LLM path needs a corpus (--corpus or --demo)")
                run = asyncio.run(_llm_run(corpus, specs, seed, dataset_id, max_items))
            else:
                from groundwatch.adapters.sources.scenarios import grounded_scenarios

                with console.status("building scenario items with SQL truth…"):
                    run = grounded_scenarios(
                        url,
                        specs,
                        corpus=corpus,
                        seed=seed,
                        dataset_id=dataset_id,
                        max_items=max_items,
                        policy=policy,
                    )
    except GroundwatchError as e:
        fail(str(e), EXIT_USAGE)  # one line, however long
    from groundwatch.adapters.db.datasets import write_jsonl

    n = write_jsonl(run.items, out)
    report = scenario_report(run, {s.id: s for s in specs}, corpus)
    console.print(f"wrote {n} scenario items to {out}")
    if corpus is None:
        console.print("no corpus: answers were not checked against documents, validity not run")
    console.print(scenario_table(report))
    if report_out is not None:
        report_out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
        console.print(f"wrote the scenario report to {report_out}")
    if n == 0:
        reasons: dict[str, int] = {}
        for s in report["scenarios"].values():
            for reason, k in s["dropped_by_reason"].items():
                reasons[reason] = reasons.get(reason, 0) + k
        why = ", ".join(f"{r} {k}" for r, k in sorted(reasons.items(), key=lambda x: -x[1]))
        fail(f"no scenario item was kept ({why or 'nothing was attempted'})", EXIT_USAGE)
    return run
