"""People's verdicts on judged answers (``human_verdicts``), the search behind the view's
groups table, and the labelled items a person's verdicts make for ``judge-agreement``.

A person's verdict is stored beside the judge's, never over it: the judge's row stays what the
judge said, so the two can be compared, and a person's later verdict on the same answer
supersedes their earlier one (the newest row of a probe is the one shown and exported).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, String, cast, func, insert, inspect, or_, select

from groundwatch.adapters.db.expected import EXPECTED
from groundwatch.adapters.db.tables import ExpectedAnswerRow, HumanVerdictRow, JudgementRow

#: The verdicts a person gives: the judge's own words for right and wrong.
HUMAN_VERDICTS = ("correct", "incorrect")


@dataclass(frozen=True)
class HumanVerdict:
    """A person's verdict on one judged answer."""

    probe_id: str
    verdict: str
    note: str
    who: str
    at: datetime
    #: what the judge said of the same answer (the store's judgement, never changed)
    judge: str = ""
    #: the row's id: orders one answer's verdicts (the newest stands), 0 when not stored
    revision: int = 0


@dataclass(frozen=True)
class JudgedAnswer:
    """Where a stored judgement counts: its tally's key, and the judge's verdict."""

    probe_id: str
    dataset_id: str
    target: str
    cohort: str
    group_id: str
    verdict: str


def has_table(engine: Engine) -> bool:
    """Whether the store keeps people's verdicts (a store before the table does not)."""
    return inspect(engine).has_table(HumanVerdictRow.__tablename__)


def is_judged(engine: Engine, probe_id: str) -> bool:
    with engine.connect() as conn:
        q = select(JudgementRow.probe_id).where(JudgementRow.probe_id == probe_id)
        return conn.execute(q).first() is not None


def judged_answer(engine: Engine, probe_id: str) -> JudgedAnswer | None:
    """The stored judgement of ``probe_id`` (None: the store has none)."""
    J = JudgementRow
    with engine.connect() as conn:
        q = select(J.dataset_id, J.target, J.cohort, J.group_id, J.verdict).where(
            J.probe_id == probe_id
        )
        row = conn.execute(q).first()
    if row is None:
        return None
    return JudgedAnswer(probe_id, *(str(v) for v in row))


def judge_verdict(engine: Engine, probe_id: str) -> str | None:
    """The judge's verdict of a stored answer; None when the store has no such judgement."""
    with engine.connect() as conn:
        q = select(JudgementRow.verdict).where(JudgementRow.probe_id == probe_id)
        row = conn.execute(q).first()
    return None if row is None else str(row[0])


def add(
    engine: Engine, probe_id: str, verdict: str, note: str, who: str, judge: str = ""
) -> HumanVerdict:
    at = datetime.now(UTC)
    with engine.begin() as conn:
        result = conn.execute(
            insert(HumanVerdictRow).values(
                probe_id=probe_id, verdict=verdict, note=note, who=who, at=at
            )
        )
        key = result.inserted_primary_key
    revision = int(key[0]) if key and key[0] is not None else 0
    return HumanVerdict(probe_id, verdict, note, who, at, judge, revision)


def newest(engine: Engine, probe_ids: Sequence[str]) -> dict[str, HumanVerdict]:
    """The newest person's verdict of each probe that has one, with the judge's beside it."""
    out: dict[str, HumanVerdict] = {}
    ids = list(dict.fromkeys(probe_ids))
    H, J = HumanVerdictRow, JudgementRow
    with engine.connect() as conn:
        for i in range(0, len(ids), 500):
            q = (
                select(H.probe_id, H.verdict, H.note, H.who, H.at, J.verdict)
                .join(J, J.probe_id == H.probe_id)
                .where(H.probe_id.in_(ids[i : i + 500]))
                .order_by(H.id)
            )
            for p, v, n, w, a, jv in conn.execute(q):
                out[str(p)] = HumanVerdict(str(p), str(v), str(n), str(w), _utc(a), str(jv))
    return out


def counted_verdicts(engine: Engine) -> dict[str, str]:
    """Probe id → the newest person's verdict, for every answer a person gave one on: what
    the tallies count instead of the judge's verdict. Empty on a store without the table."""
    if not has_table(engine):
        return {}
    H = HumanVerdictRow
    latest = select(func.max(H.id).label("id")).group_by(H.probe_id).subquery()
    q = select(H.probe_id, H.verdict).join(latest, latest.c.id == H.id)
    with engine.connect() as conn:
        return {str(p): str(v) for p, v in conn.execute(q)}


def counted_revisions(engine: Engine) -> list[tuple[JudgedAnswer, str, int]]:
    """Every answer a person gave a verdict on: where it counts, the newest person's verdict
    and its revision (what analytics applies again after a restore). Empty without the
    table."""
    if not has_table(engine):
        return []
    H, J = HumanVerdictRow, JudgementRow
    latest = select(func.max(H.id).label("id")).group_by(H.probe_id).subquery()
    q = (
        select(H.probe_id, J.dataset_id, J.target, J.cohort, J.group_id, J.verdict, H.verdict,
               H.id)
        .join(latest, latest.c.id == H.id)
        .join(J, J.probe_id == H.probe_id)
    )  # fmt: skip
    with engine.connect() as conn:
        return [
            (JudgedAnswer(str(p), str(d), str(t), str(c), str(g), str(jv)), str(v), int(i))
            for p, d, t, c, g, jv, v, i in conn.execute(q)
        ]


def count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(HumanVerdictRow)).scalar() or 0)


def labelled_items(engine: Engine) -> list[dict[str, Any]]:
    """Every judged answer a person gave a verdict on (their newest), as a GRAMMAR result
    item ``judge-agreement`` reads: the question, the full expected answer, the target's
    answer and the person's verdict as ``judgement``; ``class`` is the judge's tier, so the
    report shows which tier a person disagreed with."""
    H, J = HumanVerdictRow, JudgementRow
    latest = select(func.max(H.id).label("id")).group_by(H.probe_id).subquery()
    q = (
        select(H.probe_id, H.verdict, H.note, H.who, H.at, J.query, J.answer, J.verdict,
               J.tier, J.target, J.group_id, EXPECTED)
        .join(latest, latest.c.id == H.id)
        .join(J, J.probe_id == H.probe_id)
        .order_by(H.id)
    )  # fmt: skip
    out = []
    with engine.connect() as conn:
        for p, hv, note, who, at, query, answer, jv, tier, target, gid, expected in conn.execute(q):
            out.append(
                {
                    "query": query,
                    "expected": expected,
                    "gpt_response": answer,
                    "judgement": "Correct" if hv == "correct" else "Incorrect",
                    "class": tier or "",
                    "probe_id": p,
                    "target": target,
                    "group_id": gid,
                    "judge_verdict": jv,
                    "note": note,
                    "who": who,
                    "at": _utc(at).isoformat(timespec="seconds"),
                }
            )
    return out


def search_group_ids(engine: Engine, text: str, limit: int = 100_000) -> set[str]:
    """The groups one of whose questions or whose expected answer contains ``text`` (any
    case): what the view's search box narrows the groups table to."""
    like = f"%{text.lower()}%"
    J, E = JudgementRow, ExpectedAnswerRow
    own = cast(J.expected, String)
    shared = select(E.ref).where(func.lower(cast(E.expected, String)).like(like))
    q = (
        select(J.group_id)
        .where(
            or_(
                func.lower(J.query).like(like),
                func.lower(own).like(like),
                J.expected_ref.in_(shared),
            )
        )
        .distinct()
        .limit(limit)
    )
    with engine.connect() as conn:
        return {str(g) for (g,) in conn.execute(q)}


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
