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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from groundwatch.app.datasets import write_dataset
from groundwatch.app.scenarios import scenario_items
from groundwatch.cli.common import EXIT_USAGE, fail
from groundwatch.core.scenarios.items import ScenarioRun
from groundwatch.core.scenarios.validity import scenario_report
from groundwatch.errors import GroundwatchError

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
    source_timeout_s: float = 60.0,
    allow_privileged_source: bool = False,
) -> ScenarioRun:
    """The ``gen --scenarios`` command body; returns the run (for tests and callers)."""
    if demo == (db is not None or corpus_path is not None):
        raise typer.BadParameter("give --demo, or --corpus DIR and/or --db URL, with --scenarios")
    if out is None:
        raise typer.BadParameter("--out is required")
    try:
        with console.status("building scenario items…"):
            run, specs, corpus = scenario_items(
                wanted,
                demo=demo,
                db=db,
                corpus_path=corpus_path,
                llm=llm,
                seed=seed,
                dataset_id=dataset_id,
                max_items=max_items,
                scenario_paths=scenario_paths,
                source_timeout_s=source_timeout_s,
                allow_privileged_source=allow_privileged_source,
            )
    except GroundwatchError as e:
        fail(str(e), EXIT_USAGE)  # one line, however long
    n = write_dataset(run.items, out)
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
