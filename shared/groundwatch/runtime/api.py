"""The analytics HTTP API: live groups, one group's evidence, and the report (JSON and HTML).

Shared by the analytics service and the embedded pipeline's continuous mode, so both serve the
same endpoints over the same worker state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse

from groundwatch.core.tagging import GroupStatus, Tagger, Transition
from groundwatch.report.build import report_from_tagger
from groundwatch.report.html import render_html
from groundwatch.report.model import Report, TransitionEntry
from groundwatch.runtime.auth import require_read_token
from groundwatch.stages.analytics.stage import AnalyticsStage


def add_routes(
    app: FastAPI, worker: Callable[[], AnalyticsStage], *, read_token: str | None = None
) -> None:
    """``/groups``, ``/groups/{id}``, ``/transitions``, ``/report`` and ``/report.html`` over
    ``worker()``'s state; with ``read_token`` (``GW_API_READ_TOKEN``) each needs it as a bearer
    token."""
    guard = [Depends(require_read_token(read_token))]

    def tagger() -> Tagger:
        return worker().tagger

    @app.get("/groups", tags=["groups"], dependencies=guard)
    async def groups(
        target: str | None = None,
        cohort: str | None = None,
        status: GroupStatus | None = None,
        limit: int = Query(1000, ge=1, le=100_000),
    ) -> dict[str, Any]:
        """Semantic groups with their live status, filtered by target, cohort and status."""
        rows = []
        for t in tagger().tallies(target, cohort, status):
            rows.append(
                {
                    "group_id": t.group_id,
                    "target": t.target,
                    "cohort": t.cohort,
                    "status": t.status.value,
                    "correct": t.correct,
                    "incorrect": t.incorrect,
                    "error": t.error,
                    "undecided": t.undecided,
                    "forms": t.group_forms,
                    "forms_judged": t.forms_judged,
                }
            )
            if len(rows) >= limit:
                break
        return {"count": len(rows), "groups": rows}

    @app.get("/groups/{group_id}", tags=["groups"], dependencies=guard)
    async def group(group_id: str, target: str | None = None) -> dict[str, Any]:
        """One semantic group: answer and every form with response, retrieved ids, verdict."""
        w = worker()  # the same state under the service and the embedded pipeline
        rows = await asyncio.to_thread(w.store.group_judgements, group_id, target)
        if not rows:
            raise HTTPException(404, f"no judgements for group {group_id}")
        t = tagger()
        statuses = {
            f"{r.target}/{r.cohort}": t.status(r.target, r.cohort, group_id).value for r in rows
        }
        return {
            "group_id": group_id,
            "expected": rows[-1].expected,
            "status": statuses,
            "forms": [
                {
                    "probe_id": r.probe_id,
                    "run_id": r.run_id,
                    "target": r.target,
                    "cohort": r.cohort,
                    "form_id": r.form_id,
                    "query": r.query,
                    "answer": r.answer,
                    "verdict": r.verdict,
                    "tier": r.tier,
                    "reason": r.reason,
                    "retrieved_ids": r.retrieved_ids,
                    "relevant_doc_ids": r.relevant_doc_ids,
                    "error_kind": r.error_kind,
                }
                for r in rows
            ],
        }

    @app.get(
        "/transitions",
        tags=["groups"],
        response_model=list[TransitionEntry],
        dependencies=guard,
    )
    async def transitions(
        target: str | None = None,
        group_id: str | None = None,
        limit: int = Query(100, ge=1, le=10_000),
    ) -> list[TransitionEntry]:
        """Status changes of groups between cycles, newest first (regression = → gap)."""
        rows = await asyncio.to_thread(
            worker().store.transitions, target=target, group_id=group_id, limit=limit
        )
        return [
            TransitionEntry(
                target=r.target,
                cohort=r.cohort,
                group_id=r.group_id,
                from_status=r.from_status,
                to_status=r.to_status,
                kind=Transition(
                    r.target,
                    r.cohort,
                    r.group_id,
                    GroupStatus(r.from_status),
                    GroupStatus(r.to_status),
                    r.cycle,
                    r.series,
                    0.0,
                ).kind,
                series=r.series,
                cycle=r.cycle,
                at=r.at.isoformat(timespec="seconds") if r.at else None,
            )
            for r in rows
        ]

    def build() -> Report:
        w = worker()
        quality = w.quality.results() if w.quality is not None else None
        return report_from_tagger(w.tagger, data_quality=quality)

    @app.get(
        "/report",
        tags=["report"],
        response_model=Report,
        response_model_by_alias=True,
        dependencies=guard,
    )
    async def report() -> Report:
        """The GRAMMAR report over the current window (JSON)."""
        return await asyncio.to_thread(build)

    @app.get("/report.html", tags=["report"], response_class=HTMLResponse, dependencies=guard)
    async def report_html() -> str:
        """The same report as a self-contained HTML page with plots."""
        return render_html(await asyncio.to_thread(build))
