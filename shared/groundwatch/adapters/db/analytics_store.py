"""Analytics persistence: applied judgements (the idempotency record) and per-group tallies.

One transaction per consumed batch holds both, and the consume loop commits Kafka offsets only
after it: a crash between the two replays the batch, and the ``probe_id`` primary key plus the
tagger's duplicate check make the replay a no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from groundwatch.adapters.db.models import JudgementRow, TallyRow
from groundwatch.adapters.db.observations import observation_from_row
from groundwatch.contracts import Judgement
from groundwatch.core.tagging import GroupTally, Observation


def _insert(engine: Engine, table: Any) -> Any:
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


#: Tally columns an upsert overwrites (the key columns stay).
_TALLY_UPDATED = (
    "dataset_id",
    "scenario",
    "forms_expected",
    "correct",
    "incorrect",
    "error",
    "undecided",
    "status",
    "updated_at",
)


class AnalyticsStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self._insert_judgements = _insert(engine, JudgementRow).on_conflict_do_nothing()
        upsert = _insert(engine, TallyRow)
        self._upsert_tallies = upsert.on_conflict_do_update(
            index_elements=["target", "cohort", "group_id"],
            set_={c: getattr(upsert.excluded, c) for c in _TALLY_UPDATED},
        )

    def save(self, judgements: Sequence[Judgement], tallies: Iterable[GroupTally]) -> None:
        now = datetime.now(UTC)
        rows = [
            {
                "probe_id": str(j.probe_id),
                "run_id": j.run_id,
                "target": j.target,
                "cohort": j.cohort,
                "scenario": j.scenario,
                "dataset_id": j.dataset_id,
                "group_id": j.group_id,
                "form_id": j.form_id,
                "query": j.query,
                "verdict": j.verdict.value,
                "tier": j.tier,
                "reason": j.reason,
                "answer": j.answer,
                "expected": j.expected.model_dump(mode="json"),
                "retrieved_ids": j.retrieved_ids,
                "relevant_doc_ids": j.relevant_doc_ids,
                "error_kind": j.error_kind,
                "group_forms": j.group_forms,
                "probe_created_at": j.probe_created_at,
                "judged_at": j.judged_at,
                "tallied_at": now,
            }
            for j in judgements
        ]
        tally_rows = [
            {
                "target": t.target,
                "cohort": t.cohort,
                "group_id": t.group_id,
                "dataset_id": t.dataset_id,
                "scenario": t.scenario,
                "forms_expected": t.group_forms,
                "correct": t.correct,
                "incorrect": t.incorrect,
                "error": t.error,
                "undecided": t.undecided,
                "status": t.status.value,
                "updated_at": now,
            }
            for t in tallies
        ]
        # One executemany per table (not one multi-VALUES statement): the statement is compiled
        # once and cached, and the driver streams the rows (sqlite3 executemany, psycopg
        # pipeline), about ten times less CPU per judgement than a 2000-row VALUES list.
        with self.engine.begin() as conn:
            if rows:
                conn.execute(self._insert_judgements, rows)
            if tally_rows:
                conn.execute(self._upsert_tallies, tally_rows)

    def load_observations(self) -> list[Observation]:
        """Every stored judgement, in the order it was tallied: the replay that rebuilds state."""
        with Session(self.engine) as s:
            rows = s.scalars(select(JudgementRow).order_by(JudgementRow.tallied_at)).all()
            return [observation_from_row(r) for r in rows]

    def group_judgements(self, group_id: str, target: str | None = None) -> list[JudgementRow]:
        with Session(self.engine) as s:
            q = select(JudgementRow).where(JudgementRow.group_id == group_id)
            if target:
                q = q.where(JudgementRow.target == target)
            return list(s.scalars(q.order_by(JudgementRow.cohort, JudgementRow.form_id)).all())

    def run_observations(self, run_id: str) -> list[Observation]:
        with Session(self.engine) as s:
            rows = s.scalars(select(JudgementRow).where(JudgementRow.run_id == run_id)).all()
            return [observation_from_row(r) for r in rows]
