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
from sqlalchemy import Engine

from groundwatch.adapters.bus.base import Bus, Outgoing
from groundwatch.adapters.db.evidence import StoreEvidence
from groundwatch.contracts import HumanVerdict, Topics
from groundwatch.core.tagging import GroupStatus, TallyReads, Transition
from groundwatch.report.build import report_from_tagger
from groundwatch.report.document import GroupPage, Report, TransitionEntry
from groundwatch.report.groups import FAILING, fill_evidence, group_results
from groundwatch.report.html import render_html
from groundwatch.runtime.allocator import release_free_memory
from groundwatch.runtime.auth import require_read_token
from groundwatch.runtime.view import Reads, ViewAuth, add_view
from groundwatch.runtime.view.pages import PublishVerdict
from groundwatch.runtime.view.runs import RunPages
from groundwatch.stages.analytics.stage import AnalyticsStage

_STATUS_WORD = "(gap|robust|non_robust|flaky|unknown|pending|failing)"
#: What ``/groups?status=`` accepts, declared in the OpenAPI document.
_STATUS_LIST = f"^{_STATUS_WORD}(,{_STATUS_WORD})*$"


def _statuses(spec: str | None) -> list[GroupStatus] | None:
    """``gap,non_robust`` or ``failing`` → statuses; ValueError naming an unknown one."""
    if not spec:
        return None
    out: list[GroupStatus] = []
    for part in (p.strip().lower() for p in spec.split(",")):
        if part == "failing":
            out += sorted(FAILING)
        elif part:
            try:
                out.append(GroupStatus(part))
            except ValueError:
                known = ", ".join(s.value for s in GroupStatus)
                raise ValueError(f"unknown status {part!r}; one of {known} or failing") from None
    return out


def verdict_publisher(bus: Bus, topics: Topics) -> PublishVerdict:
    """Publish people's verdicts on ``topics.human_verdicts``, keyed by group (the partition
    of the analytics instance that owns the group)."""
    name = topics.human_verdicts.name

    async def publish(message: HumanVerdict) -> None:
        await bus.publish_many([Outgoing(name, message.key, None, message)])

    return publish


def add_routes(
    app: FastAPI,
    worker: Callable[[], AnalyticsStage],
    *,
    read_token: str | None = None,
    api_token: str | None = None,
    run_pages: Callable[[Engine], RunPages] | None = None,
    publish_verdict: PublishVerdict | None = None,
) -> None:
    """``/groups``, ``/groups/{id}``, ``/transitions``, ``/report``, ``/report.html`` and the
    view's pages (``/ui``) over ``worker()``'s state; with ``read_token``
    (``GW_API_READ_TOKEN``) each needs it as a bearer token; a person's verdict on ``/ui``
    needs ``api_token`` (``GW_API_TOKEN``; unset: verdicts are closed); ``run_pages`` gives
    the view's trends and comparison pages their numbers over the store; ``publish_verdict``
    puts a person's verdict on the ``human-verdicts`` topic, whence the analytics stage counts
    it in the live tallies (:func:`verdict_publisher`)."""
    guard = [Depends(require_read_token(read_token))]

    def reads() -> Reads:
        w = worker()
        return Reads(w.view, StoreEvidence(w.store.engine), w.store.engine)

    add_view(
        app,
        reads,
        ViewAuth(read_token=read_token, write_token=api_token),
        runs=run_pages,
        publish_verdict=publish_verdict,
    )

    def tagger() -> TallyReads:
        # the read model the consume loop published last: never the live tagger, which the
        # loop changes while a request reads
        return worker().view

    @app.get("/groups", tags=["groups"], response_model=GroupPage, dependencies=guard)
    async def groups(
        target: str | None = None,
        cohort: str | None = None,
        status: str | None = Query(
            None,
            description="gap, non_robust, flaky, unknown, pending, robust or failing;"
            " comma-separated. Without cohort, a group's status over every cohort.",
            pattern=_STATUS_LIST,
        ),
        scenario: str = Query("factual", description="factual, S1…S6 or all."),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=10_000),
    ) -> GroupPage:
        """Semantic groups worst first, each with its SQL, gold answer, and every form's
        question, answer, verdict and cause (the same rows as `groundwatch groups`)."""
        wanted = _statuses(status)  # the pattern admits only known statuses
        # the selection reads the published view (immutable); the texts are read from the
        # store in a thread
        total, rows = group_results(
            tagger(),
            target=target,
            cohort=cohort,
            status=wanted,
            scenario=None if scenario == "all" else scenario,
            offset=offset,
            limit=limit,
        )
        evidence = StoreEvidence(worker().store.engine)
        rows = await asyncio.to_thread(fill_evidence, rows, evidence)
        cycles = [g.cycle for g in rows]
        series = {g.series for g in rows if g.series}
        return GroupPage(
            total=total,
            offset=offset,
            limit=limit,
            count=len(rows),
            # the live state may hold several series (one analytics serves many generators)
            series=next(iter(series)) if len(series) == 1 else None,
            latest_cycle=max(cycles) if cycles else None,
            groups=rows,
        )

    @app.get("/groups/{group_id}", tags=["groups"], dependencies=guard)
    async def group(
        group_id: str,
        target: str | None = None,
        limit: int = Query(
            500, ge=1, le=10_000, description="Newest stored judgements listed in forms."
        ),
    ) -> dict[str, Any]:
        """One semantic group: its live status per target (``groups``: SQL, gold answer and
        each form's latest question, answer, verdict and cause in the window) and its newest
        stored judgements (``forms``, at most ``limit``; ``forms_total`` counts them all).
        ``group_id`` may be a unique prefix of a live group's id, as for ``groundwatch show``."""
        w = worker()  # the same state under the service and the embedded pipeline
        _, live = group_results(tagger(), target=target, scenario=None, group_id=group_id)
        ids = sorted({g.group_id for g in live})
        if group_id not in ids and len(ids) > 1:
            shown = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
            raise HTTPException(404, f"{group_id!r} matches {len(ids)} groups ({shown})")
        if group_id not in ids and ids:
            group_id = ids[0]  # a unique prefix: the group it names
        live = [g for g in live if g.group_id == group_id]
        live = await asyncio.to_thread(fill_evidence, live, StoreEvidence(w.store.engine))
        rows = await asyncio.to_thread(w.store.group_judgements, group_id, target, limit)
        if not rows and not live:
            raise HTTPException(404, f"no judgements for group {group_id}")
        total = (
            len(rows)
            if len(rows) < limit
            else await asyncio.to_thread(w.store.count_group_judgements, group_id, target)
        )
        t = tagger()
        statuses = {
            f"{r.target}/{r.cohort}": t.status(r.target, r.cohort, group_id).value for r in rows
        }
        newest = max(rows, key=lambda r: (r.cycle, r.tallied_at)) if rows else None
        return {
            "group_id": group_id,
            "expected": newest.expected if newest is not None else None,
            "status": statuses,
            "groups": [g.model_dump(mode="json") for g in live],
            "forms_total": total,
            "forms_truncated": total > len(rows),
            "forms": [
                {
                    "probe_id": r.probe_id,
                    "run_id": r.run_id,
                    "cycle": r.cycle,
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
        return report_from_tagger(
            w.view,
            data_quality=quality,
            evidence=StoreEvidence(w.store.engine),
            after_pass=release_free_memory,
        )

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
