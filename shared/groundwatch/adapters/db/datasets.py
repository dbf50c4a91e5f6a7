"""Datasets of semantic groups: JSONL files, the database, and the GRAMMAR tool's files.

JSONL: one JSON object per line, one line per semantic group (``SemanticGroup`` as JSON: at least
``group_id``, ``sql``, ``params``, ``answer`` and ``forms: [{form_id, cohort, text}]``), streamed
both ways so a million groups never sit in memory. The database rows are the generator's own
state (DESIGN.md: datasets, groups, forms and answer versions belong to the generator).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from groundwatch.adapters.db.models import AnswerVersionRow, Dataset, FormRow, GroupRow
from groundwatch.core.generation.grammar_format import (
    import_qa_data,
    merge_cohorts,
    sql_templates_in_order,
)
from groundwatch.core.model import Expected, SemanticGroup, TextForm


def group_line(group: SemanticGroup) -> bytes:
    """One JSONL line (with the newline)."""
    return group.__pydantic_serializer__.to_json(group) + b"\n"


def write_jsonl(groups: Iterable[SemanticGroup], out: str | Path | IO[bytes]) -> int:
    """Write groups as JSONL; returns the number of lines."""
    if isinstance(out, str | Path):
        with open(out, "wb") as fh:
            return write_jsonl(groups, fh)
    n = 0
    for g in groups:
        out.write(group_line(g))
        n += 1
    return n


def iter_jsonl(path: str | Path | IO[bytes]) -> Iterator[SemanticGroup]:
    """Read groups back, one line at a time; blank lines are skipped."""
    if isinstance(path, str | Path):
        with open(path, "rb") as fh:
            yield from iter_jsonl(fh)
        return
    for lineno, line in enumerate(path, 1):
        if not line.strip():
            continue
        try:
            yield SemanticGroup.model_validate(orjson.loads(line))
        except (orjson.JSONDecodeError, ValueError) as e:
            raise ValueError(f"line {lineno}: not a semantic group: {e}") from e


def read_jsonl(path: str | Path | IO[bytes]) -> list[SemanticGroup]:
    return list(iter_jsonl(path))


def save_groups(
    session: Session,
    dataset: Dataset,
    groups: Iterable[SemanticGroup],
    *,
    replace: bool = True,
) -> int:
    """Store a dataset and its groups and forms (the caller commits).

    With ``replace`` the dataset's earlier groups and forms are deleted first, so saving the same
    dataset twice leaves one copy. Each group's answer is also recorded as answer version 1 unless
    one is already stored (later versions are the live generator's business).
    """
    session.merge(dataset)
    did = dataset.dataset_id
    if replace:
        session.execute(delete(FormRow).where(FormRow.dataset_id == did))
        session.execute(delete(GroupRow).where(GroupRow.dataset_id == did))
    session.flush()
    n = 0
    for g in groups:
        session.add(
            GroupRow(
                dataset_id=did,
                group_id=g.group_id,
                sql=g.sql,
                params=g.params,
                answer=g.answer.model_dump(mode="json"),
                answer_version=g.answer.version,
                relevant_doc_ids=list(g.relevant_doc_ids),
                scenario=g.scenario,
                template_id=g.template_id,
            )
        )
        session.add_all(
            FormRow(
                dataset_id=did, group_id=g.group_id, form_id=f.form_id, cohort=f.cohort, text=f.text
            )
            for f in g.forms
        )
        if session.get(AnswerVersionRow, (did, g.group_id, g.answer.version)) is None:
            session.add(
                AnswerVersionRow(
                    dataset_id=did,
                    group_id=g.group_id,
                    version=g.answer.version,
                    answer=g.answer.model_dump(mode="json"),
                )
            )
        n += 1
        if n % 1000 == 0:
            session.flush()
    session.flush()
    return n


def load_groups(session: Session, dataset_id: str) -> list[SemanticGroup]:
    """The groups of a dataset with their forms, in group-id order."""
    forms: dict[str, list[TextForm]] = {}
    for f in session.scalars(
        select(FormRow)
        .where(FormRow.dataset_id == dataset_id)
        .order_by(FormRow.group_id, FormRow.cohort, FormRow.form_id)
    ):
        forms.setdefault(f.group_id, []).append(
            TextForm(form_id=f.form_id, cohort=f.cohort, text=f.text)
        )
    out = []
    for r in session.scalars(
        select(GroupRow).where(GroupRow.dataset_id == dataset_id).order_by(GroupRow.group_id)
    ):
        out.append(
            SemanticGroup(
                group_id=r.group_id,
                dataset_id=r.dataset_id,
                sql=r.sql,
                params=dict(r.params),
                answer=Expected.model_validate(r.answer),
                forms=forms.get(r.group_id, []),
                relevant_doc_ids=list(r.relevant_doc_ids),
                scenario=r.scenario,
                template_id=r.template_id,
            )
        )
    return out


def _load_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def import_grammar_dir(
    directory: str | Path,
    cohorts: Sequence[str] = ("short", "long"),
    *,
    dataset_id: str = "grammar",
) -> list[SemanticGroup]:
    """Semantic groups from a GRAMMAR tool output directory.

    Reads ``SQLTemplateGenerator_sql_templates.json``, ``TextTemplateGenerator_<cohort>.json``
    (optional, used to match answer lists to templates) and
    ``QADataGenerator_<cohort>_with_ids.json`` per cohort; cohorts of the same group are merged.
    """
    d = Path(directory)
    sqls = sql_templates_in_order(_load_json(d / "SQLTemplateGenerator_sql_templates.json"))
    per_cohort = []
    for c in cohorts:
        tt_path = d / f"TextTemplateGenerator_{c}.json"
        texts = _load_json(tt_path) if tt_path.exists() else None
        groups, skipped = import_qa_data(
            sqls,
            _load_json(d / f"QADataGenerator_{c}_with_ids.json"),
            c,
            text_templates=texts,
            dataset_id=dataset_id,
        )
        if skipped.get("unmatched"):
            raise ValueError(f"{c}: {skipped['unmatched']} QA entries match no SQL template")
        per_cohort.append(groups)
    return merge_cohorts(*per_cohort)
