"""What a comparison of runs reads from the store: a run's verdict counts per group and cohort
(one aggregate query, never a row per judgement in Python), the forms of the groups that
changed, and the (group, form) pairs a dataset version's digest is taken over."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, case, func, inspect, select

from groundwatch.adapters.db.tables import (
    FormRow,
    GroupRow,
    JudgementRow,
    JudgementSummaryRow,
    PrunedCycleRow,
    RunRow,
)

_CHUNK = 500
_BATCH = 10_000


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    dataset_id: str
    series: str
    cycle: int
    status: str


def run_info(engine: Engine, run_id: str) -> RunInfo | None:
    with engine.connect() as conn:
        row = conn.execute(
            select(
                RunRow.run_id, RunRow.dataset_id, RunRow.series, RunRow.cycle, RunRow.status
            ).where(RunRow.run_id == run_id)
        ).first()
    return RunInfo(*row) if row is not None else None


def series_runs(engine: Engine, series: str) -> list[RunInfo]:
    """The runs of ``series``, newest cycle first."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(RunRow.run_id, RunRow.dataset_id, RunRow.series, RunRow.cycle, RunRow.status)
            .where(RunRow.series == series)
            .order_by(RunRow.cycle.desc(), RunRow.started_at.desc())
        ).all()
    return [RunInfo(*r) for r in rows]


def _count(verdict: str) -> Any:
    return func.sum(case((JudgementRow.verdict == verdict, 1), else_=0))


def summarised_cycle(engine: Engine, run_id: str) -> tuple[str, int] | None:
    """(series, cycle) of a run retention rolled up into summaries (its raw rows gone or
    going), else None: such a run's counts and verdicts are read from its summaries."""
    if not inspect(engine).has_table("pruned_cycles"):
        return None
    with engine.connect() as conn:
        row = conn.execute(
            select(PrunedCycleRow.series, PrunedCycleRow.cycle).where(
                PrunedCycleRow.run_id == run_id
            )
        ).first()
    return (str(row[0]), int(row[1])) if row is not None else None


def _summaries_of(series: str, cycle: int) -> Any:
    s = JudgementSummaryRow
    return select(s).where(
        s.series == series, s.first_cycle <= cycle, s.last_cycle >= cycle, s.scenario == "factual"
    )


def run_counts(
    engine: Engine, run_id: str
) -> Iterator[tuple[str, str, str, int, int, int, int, int]]:
    """(target, cohort, group_id, group_forms, correct, incorrect, error, undecided) of every
    GRAMMAR group the run judged (RAGProbe scenario probes left out); a summarised run's from
    the summaries covering its cycle (the same counts: a summary holds them per cycle)."""
    pruned = summarised_cycle(engine, run_id)
    if pruned is not None:
        with engine.connect() as conn:
            for r in conn.execute(_summaries_of(*pruned)):
                yield (r.target, r.cohort, r.group_id, int(r.group_forms or 1), r.correct,
                       r.incorrect, r.error, r.undecided)  # fmt: skip
        return
    q = (
        select(
            JudgementRow.target,
            JudgementRow.cohort,
            JudgementRow.group_id,
            func.max(JudgementRow.group_forms),
            _count("correct"),
            _count("incorrect"),
            _count("error"),
            _count("undecided"),
        )
        .where(JudgementRow.run_id == run_id, JudgementRow.scenario == "factual")
        .group_by(JudgementRow.target, JudgementRow.cohort, JudgementRow.group_id)
    )
    with engine.connect() as conn:
        # in batches: a row fetched at a time costs more than the query (200k rows a run)
        for rows in conn.execute(q).partitions(_BATCH):
            for t, c, g, forms, right, wrong, err, und in rows:
                yield (t, c, g, int(forms or 1), int(right or 0), int(wrong or 0),
                       int(err or 0), int(und or 0))  # fmt: skip


def run_forms(
    engine: Engine, run_id: str, keys: Sequence[tuple[str, str]]
) -> Iterator[tuple[str, str, str, str, str, str | None, str]]:
    """(target, group_id, cohort, form_id, verdict, answer, question) of the run's judgements
    of the (target, group_id) ``keys`` — by the judgements' (target, group_id) index, never a
    scan of the run."""
    pruned = summarised_cycle(engine, run_id)
    if pruned is not None:
        yield from _summary_forms(engine, *pruned, keys)
        return
    by_target: dict[str, list[str]] = {}
    for target, gid in dict.fromkeys(keys):
        by_target.setdefault(target, []).append(gid)
    with engine.connect() as conn:
        for target, ids in sorted(by_target.items()):
            for i in range(0, len(ids), _CHUNK):
                q = select(
                    JudgementRow.target,
                    JudgementRow.group_id,
                    JudgementRow.cohort,
                    JudgementRow.form_id,
                    JudgementRow.verdict,
                    JudgementRow.answer,
                    JudgementRow.query,
                ).where(
                    JudgementRow.target == target,
                    JudgementRow.group_id.in_(ids[i : i + _CHUNK]),
                    JudgementRow.run_id == run_id,
                )
                for r in conn.execute(q):
                    yield (r[0], r[1], r[2], r[3], r[4], r[5], r[6])


def _summary_forms(
    engine: Engine, series: str, cycle: int, keys: Sequence[tuple[str, str]]
) -> Iterator[tuple[str, str, str, str, str, str | None, str]]:
    """:func:`run_forms` of a summarised cycle: each form's verdict; its answer where the
    summary kept it (a form whose verdict changed at this cycle), no question."""
    wanted = set(keys)
    s = JudgementSummaryRow
    gids = sorted({gid for _, gid in wanted})
    with engine.connect() as conn:
        for i in range(0, len(gids), _CHUNK):
            stmt = _summaries_of(series, cycle).where(s.group_id.in_(gids[i : i + _CHUNK]))
            for r in conn.execute(stmt):
                if (r.target, r.group_id) not in wanted:
                    continue
                changed = (r.changed or {}) if r.first_cycle == cycle else {}
                for form, (verdict, _version, _stale) in sorted((r.verdicts or {}).items()):
                    answer = (changed.get(form) or {}).get("answer")
                    yield (r.target, r.group_id, r.cohort, form, verdict, answer, "")


def group_truths(
    engine: Engine, dataset_id: str, group_ids: Sequence[str]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """group_id → (SQL, stored answer) of the dataset's groups among ``group_ids``."""
    ids = list(dict.fromkeys(group_ids))
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), _CHUNK):
            q = select(GroupRow.group_id, GroupRow.sql, GroupRow.answer).where(
                GroupRow.dataset_id == dataset_id, GroupRow.group_id.in_(ids[i : i + _CHUNK])
            )
            for gid, sql, answer in conn.execute(q):
                out[gid] = (sql, dict(answer or {}))
    return out


def dataset_pairs(engine: Engine, dataset_id: str) -> Iterator[tuple[str, str]]:
    """(group_id, form_id) of every form the store holds for ``dataset_id``."""
    q = select(FormRow.group_id, FormRow.form_id).where(FormRow.dataset_id == dataset_id)
    with engine.connect() as conn:
        for rows in conn.execute(q).partitions(_BATCH):
            # plain tuples: the digest sorts them, and rows compare slowly
            yield from [(gid, fid) for gid, fid in rows]
