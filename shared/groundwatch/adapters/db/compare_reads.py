"""What a comparison of runs reads from the store: a run's verdict counts per group and cohort
(one aggregate query, never a row per judgement in Python), the forms of the groups that
changed, and the (group, form) pairs a dataset version's digest is taken over."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, case, func, select

from groundwatch.adapters.db.models import FormRow, GroupRow, JudgementRow, RunRow

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


def run_counts(
    engine: Engine, run_id: str
) -> Iterator[tuple[str, str, str, int, int, int, int, int]]:
    """(target, cohort, group_id, group_forms, correct, incorrect, error, undecided) of every
    GRAMMAR group the run judged (RAGProbe scenario probes left out)."""
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
