"""The texts behind verdicts, read from the store: judgements by probe id, SQL by group.

The analytics tagger keeps verdicts only; the per-group listings (``groundwatch groups``,
``/groups``, the report's failing facts) read each form's question, answer, tier and reason from
the ``judgements`` table and each group's SQL from ``semantic_groups`` (stored with the dataset by
``groundwatch run``, ``demo`` and the generator service: :func:`ensure_dataset_stored`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session, load_only

from groundwatch.adapters.db.expected import fill_expected
from groundwatch.adapters.db.tables import Dataset, FormRow, GroupRow, JudgementRow
from groundwatch.core.model import SemanticGroup

#: Ids per IN list: far below every backend's parameter limit.
_CHUNK = 500
#: What :class:`groundwatch.report.groups.FormEvidence` reads of a judgement row.
_FORM_TEXTS = load_only(
    JudgementRow.probe_id,
    JudgementRow.query,
    JudgementRow.answer,
    JudgementRow.tier,
    JudgementRow.reason,
    JudgementRow.expected,
    JudgementRow.expected_ref,
    raiseload=True,
)


class StoreEvidence:
    """:class:`groundwatch.report.groups.Evidence` over a database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def forms(self, probe_ids: Sequence[str]) -> Mapping[str, JudgementRow]:
        out: dict[str, JudgementRow] = {}
        ids = list(dict.fromkeys(probe_ids))
        with Session(self.engine, expire_on_commit=False) as s:
            for i in range(0, len(ids), _CHUNK):
                # the attributes FormEvidence names, not the row's scores and contexts: a
                # report reads 12 forms of each of 2,000 failing groups (~5 KB a whole row)
                q = (
                    select(JudgementRow)
                    .options(_FORM_TEXTS)
                    .where(JudgementRow.probe_id.in_(ids[i : i + _CHUNK]))
                )
                for row in s.scalars(q):
                    out[row.probe_id] = row
            s.expunge_all()
        fill_expected(self.engine, out.values())
        return out

    def sources(self, keys: Sequence[tuple[str, str]]) -> Mapping[tuple[str, str], GroupRow]:
        out: dict[tuple[str, str], GroupRow] = {}
        by_dataset: dict[str, list[str]] = {}
        for dataset_id, group_id in dict.fromkeys(keys):
            by_dataset.setdefault(dataset_id, []).append(group_id)
        with Session(self.engine, expire_on_commit=False) as s:
            # one dataset's group ids at a time, not (dataset, group) pairs: SQLite answers a
            # row-value IN by scanning the table (50 ms a page at 100k groups), an equality on
            # the key's first column and an IN on its second by the key
            for dataset_id, gids in by_dataset.items():
                for i in range(0, len(gids), _CHUNK):
                    q = select(GroupRow).where(
                        GroupRow.dataset_id == dataset_id,
                        GroupRow.group_id.in_(gids[i : i + _CHUNK]),
                    )
                    for row in s.scalars(q):
                        out[(row.dataset_id, row.group_id)] = row
            s.expunge_all()
        return out


def ensure_dataset_stored(engine: Engine, groups: Iterable[SemanticGroup]) -> int:
    """Store every group (SQL, parameters, answer) and form not stored yet; returns how many
    groups were added. Groups already there are left as they are: a group id is a hash of its
    SQL and parameters, so a stored group's SQL is already right (its answer's versions are the
    generator's business, and each judgement keeps the answer it was judged against)."""
    added = 0
    #: the datasets this call creates, with their cohorts as the groups go by
    created: dict[str, set[str]] = {}
    known: set[str] = set()
    with Session(engine) as s, s.begin():
        # _CHUNK groups at a time, never the whole dataset: it may be read from its file
        for chunk in _chunks(groups, _CHUNK):
            by_dataset: dict[str, dict[str, SemanticGroup]] = {}
            for g in chunk:
                by_dataset.setdefault(g.dataset_id, {})[g.group_id] = g
            for did, items in by_dataset.items():
                if did not in known:
                    known.add(did)
                    if s.get(Dataset, did) is None:
                        s.add(Dataset(dataset_id=did, name=did, cohorts=[]))
                        s.flush()
                        created[did] = set()
                if did in created:
                    created[did].update(c for g in items.values() for c in g.cohorts)
                # rows of earlier chunks are in this transaction: a repeated id is found too
                have = set(
                    s.scalars(
                        select(GroupRow.group_id).where(
                            GroupRow.dataset_id == did, GroupRow.group_id.in_(list(items))
                        )
                    )
                )
                new = [g for gid, g in items.items() if gid not in have]
                if not new:
                    continue
                # executemany of plain rows: a large dataset is stored in seconds, not minutes
                s.execute(
                    insert(GroupRow),
                    [
                        {
                            "dataset_id": did,
                            "group_id": g.group_id,
                            "sql": g.sql,
                            "params": g.params,
                            "answer": g.answer.model_dump(mode="json"),
                            "answer_version": g.answer.version,
                            "relevant_doc_ids": list(g.relevant_doc_ids),
                            "scenario": g.scenario,
                            "template_id": g.template_id,
                        }
                        for g in new
                    ],
                )
                forms = [
                    {
                        "dataset_id": did,
                        "group_id": g.group_id,
                        "form_id": f.form_id,
                        "cohort": f.cohort,
                        "text": f.text,
                    }
                    for g in new
                    for f in {f.form_id: f for f in g.forms}.values()
                ]
                if forms:
                    s.execute(insert(FormRow), forms)
                added += len(new)
        for did, cohorts in created.items():
            row = s.get(Dataset, did)
            if row is not None:
                row.cohorts = sorted(cohorts)
    return added


def _chunks(items: Iterable[SemanticGroup], size: int) -> Iterator[list[SemanticGroup]]:
    chunk: list[SemanticGroup] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
