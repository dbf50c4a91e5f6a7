"""Stored judgements as core observations: the one mapping from the database to the tagger.

Used by a restarting analytics service to rebuild its state and by ``groundwatch report --run``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from groundwatch.adapters.db.expected import EXPECTED
from groundwatch.adapters.db.tables import JudgementRow
from groundwatch.core.data_quality import GroupSpec
from groundwatch.core.model import Expected, Verdict
from groundwatch.core.score_json import scores_from_json
from groundwatch.core.tagging import STALE_REASON, Observation


def _epoch(dt: datetime | None) -> float:
    if dt is None:
        return 0.0
    if dt.tzinfo is None:  # SQLite drops the zone; we always store UTC
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


#: The judgement columns an observation is made of (a rebuild selects these, not whole rows).
OBSERVATION_COLUMNS = (
    JudgementRow.probe_id,
    JudgementRow.target,
    JudgementRow.cohort,
    JudgementRow.group_id,
    JudgementRow.form_id,
    JudgementRow.verdict,
    JudgementRow.run_id,
    JudgementRow.dataset_id,
    JudgementRow.scenario,
    JudgementRow.group_forms,
    JudgementRow.retrieved_ids,
    JudgementRow.relevant_doc_ids,
    JudgementRow.judged_at,
    JudgementRow.probe_created_at,
    JudgementRow.reason,
    JudgementRow.series,
    JudgementRow.cycle,
    JudgementRow.truth_version,
    JudgementRow.error_kind,
    JudgementRow.context_has_answer,
    JudgementRow.scores,
)


def observation_from_row(row: Any) -> Observation:
    """A stored judgement as an observation (also how a restarted analytics rebuilds its tagger):
    a :class:`JudgementRow`, or a result row of :data:`OBSERVATION_COLUMNS`."""
    at = _epoch(row.judged_at)
    return Observation(
        probe_id=row.probe_id,
        target=row.target,
        cohort=row.cohort,
        group_id=row.group_id,
        form_id=row.form_id,
        verdict=Verdict(row.verdict),
        run_id=row.run_id,
        dataset_id=row.dataset_id,
        scenario=row.scenario,
        group_forms=row.group_forms,
        retrieved_ids=tuple(str(x) for x in row.retrieved_ids or ()),
        relevant_doc_ids=tuple(str(x) for x in row.relevant_doc_ids or ()),
        at=at,
        latency_s=max(0.0, at - _epoch(row.probe_created_at)),
        stale=row.reason.startswith(STALE_REASON),
        series=row.series,
        cycle=row.cycle,
        truth_version=row.truth_version,
        error_kind=row.error_kind,
        context_has_answer=row.context_has_answer,
        scores=scores_from_json(row.scores).tallied(),
    )


def observations_for_runs(session: Session, run_ids: Sequence[str]) -> list[Observation]:
    """Every stored judgement of the given runs, in the order they were tallied."""
    from sqlalchemy import select

    stmt = (
        select(JudgementRow)
        .where(JudgementRow.run_id.in_(list(run_ids)))
        .order_by(JudgementRow.tallied_at, JudgementRow.probe_id)
    )
    return [observation_from_row(r) for r in session.scalars(stmt)]


def observations_for_series(session: Session, series: str) -> list[Observation]:
    """Every stored judgement of a monitoring series, in cycle order (the replay a windowed
    tagger needs to rebuild statuses, flakiness and transitions)."""
    from sqlalchemy import select

    # the observation's columns only, not whole rows: the texts beside them (question,
    # answer, expected) are most of a row and are read per page, for the rows shown
    stmt = (
        select(*OBSERVATION_COLUMNS)
        .where(JudgementRow.series == series)
        .order_by(JudgementRow.cycle, JudgementRow.tallied_at, JudgementRow.probe_id)
    )
    return [observation_from_row(r) for r in session.execute(stmt)]


def specs_for_runs(session: Session, run_ids: Sequence[str]) -> dict[str, GroupSpec]:
    """The data-quality specs of the stored runs' factual groups: every asked question and the
    group's latest expected answer (entities: the questions' quoted names)."""
    from sqlalchemy import select

    stmt = (
        select(JudgementRow.group_id, JudgementRow.query, EXPECTED)
        .where(JudgementRow.run_id.in_(list(run_ids)), JudgementRow.scenario == "factual")
        .order_by(JudgementRow.tallied_at)
    )
    questions: dict[str, dict[str, None]] = {}
    expected: dict[str, Expected] = {}
    for gid, query, exp in session.execute(stmt):
        questions.setdefault(gid, {})[query] = None
        expected[gid] = Expected.model_validate(exp).model_copy(update={"version": 1})
    return {g: GroupSpec(g, tuple(qs), expected[g]) for g, qs in questions.items()}
