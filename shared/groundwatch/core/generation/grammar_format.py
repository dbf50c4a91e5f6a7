"""The GRAMMAR tool's JSON files, both ways.

- SQL templates: ``{"('client',)": ["SELECT Location FROM Client WHERE Name = '[Client.Name]';"]}``
- text templates (one file per linguistic attribute): ``{sql template: [text template, ...]}``
- QA data (``QADataGenerator_<attr>_with_ids.json``): one list per SQL template, each entry
  ``[answer-tuple string, [text query, ...]]`` — one entry per semantic group. The tool selects the
  placeholder columns after the answer columns, so ``"[('Maldives', 'Blue Horizon Hotels')]"``
  is answer ``Maldives`` for the fill ``Blue Horizon Hotels``.

Imported groups get the same ids as generated ones would (hash of the named-parameter SQL and the
bound values), so the short and long files merge into one group with forms in both cohorts.
"""

from __future__ import annotations

import ast
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.realize import fill_text
from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.validation import paper_to_named, validate_sql
from groundwatch.core.model import (
    AnswerType,
    Expected,
    SemanticGroup,
    TextForm,
    form_id_for,
    group_id_for,
)

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_entity_key(key: str) -> tuple[str, ...]:
    """``"('project', )"`` → ``("project",)``."""
    value = ast.literal_eval(key)
    return tuple(value) if isinstance(value, tuple | list) else (str(value),)


def entity_key(tables: Sequence[str]) -> str:
    return repr(tuple(t.lower() for t in tables))


def sql_templates_in_order(data: Mapping[str, Sequence[str]]) -> list[str]:
    """All SQL templates of a ``SQLTemplateGenerator`` file, in file order."""
    return [tpl for _, tpls in data.items() for tpl in tpls]


def dump_sql_templates(templates: Sequence[SqlTemplate]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in templates:
        out.setdefault(entity_key(t.tables), []).append(t.grammar_sql())
    return out


def dump_text_templates(
    templates: Sequence[SqlTemplate],
    text_templates: Mapping[str, Mapping[str, Sequence[str]]],
    cohort: str,
) -> dict[str, list[str]]:
    """One ``TextTemplateGenerator_<cohort>.json`` mapping."""
    return {
        t.grammar_sql(): list(text_templates.get(t.template_id, {}).get(cohort, ()))
        for t in templates
    }


def schema_from_sql(sqls: Sequence[str], dialect: str = "mysql") -> SchemaInfo:
    """A schema holding just the tables and columns the templates mention.

    Lets paper files be imported without their database (the Aurp database is MySQL and not
    shipped); kinds are unknown, so every column is text.
    """
    tables: dict[str, dict[str, None]] = {}
    for sql in sqls:
        named, mapping = paper_to_named(sql)
        tree = sqlglot.parse_one(named, read=dialect)
        scope = [t.name for t in tree.find_all(exp.Table)]
        alias = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
        for t in scope:
            tables.setdefault(t, {})
        for col in tree.find_all(exp.Column):
            owner = alias.get(col.table, col.table) if col.table else (scope[0] if scope else "")
            if owner:
                tables.setdefault(owner, {})[col.name] = None
        for table, column in mapping.values():
            tables.setdefault(table, {})[column] = None
    return SchemaInfo(
        tuple(
            TableInfo(name, tuple(ColumnInfo(c, AnswerType.TEXT) for c in cols))
            for name, cols in tables.items()
        ),
        dialect=dialect,
    )


def _kind(value: Any) -> AnswerType:
    if isinstance(value, bool):
        return AnswerType.TEXT
    if isinstance(value, int | float):
        return AnswerType.NUMBER
    if isinstance(value, dt.date) or (isinstance(value, str) and _ISO_DATE.fullmatch(value)):
        return AnswerType.DATE
    return AnswerType.TEXT


def _match_template(
    entries: Sequence[Any], candidates: Sequence[tuple[SqlTemplate, Sequence[str] | None]]
) -> SqlTemplate | None:
    """The template whose text templates, filled with an entry's values, give the entry's texts."""
    for entry in entries[:3]:
        rows = ast.literal_eval(entry[0])
        texts = list(entry[1])
        if not rows:
            continue
        for t, tts in candidates:
            if tts is None:
                continue
            n = len(t.slots)
            params = dict(zip(t.params, rows[0][-n:], strict=True))
            if [fill_text(tt, t, params) for tt in tts] == texts:
                return t
    return None


def import_qa_data(
    sql_templates: Sequence[str],
    qa_data: Sequence[Sequence[Any]],
    cohort: str,
    *,
    text_templates: Mapping[str, Sequence[str]] | None = None,
    dataset_id: str = "grammar",
    dialect: str = "mysql",
) -> tuple[list[SemanticGroup], dict[str, int]]:
    """Semantic groups of one ``QADataGenerator_<cohort>_with_ids.json`` file.

    Each per-template list is matched to its SQL template by filling the template's text
    templates (when given) and comparing with the entry's texts, else by file order. Returns the
    groups and counts of what was skipped (``several_answers``, ``unmatched``).
    """
    schema = schema_from_sql(sql_templates, dialect)
    templates = [
        validate_sql(s, schema, origin="import", allow_surrogates=True) for s in sql_templates
    ]
    raw_by_named = dict(zip([t.sql for t in templates], sql_templates, strict=True))
    candidates = [(t, (text_templates or {}).get(raw_by_named[t.sql])) for t in templates]
    skipped: dict[str, int] = {"several_answers": 0, "unmatched": 0}
    groups: list[SemanticGroup] = []
    for i, entries in enumerate(qa_data):
        t = _match_template(entries, candidates) if text_templates else None
        if t is None:
            t = templates[i] if i < len(templates) and not text_templates else None
        if t is None:
            skipped["unmatched"] += len(entries)
            continue
        n = len(t.slots)
        for answer_text, texts in entries:
            rows = ast.literal_eval(answer_text)
            if len(rows) != 1:
                skipped["several_answers"] += 1
                continue
            row = tuple(rows[0])
            answer, fill = row[:-n], row[-n:]
            params = dict(zip(t.params, fill, strict=True))
            gid = group_id_for(t.sql, params)
            groups.append(
                SemanticGroup(
                    group_id=gid,
                    dataset_id=dataset_id,
                    sql=t.sql,
                    params=params,
                    answer=Expected(
                        values=[format_value(v) for v in answer], types=[_kind(v) for v in answer]
                    ),
                    forms=[
                        TextForm(form_id=form_id_for(gid, cohort, q), cohort=cohort, text=q)
                        for q in texts
                    ],
                    template_id=t.template_id,
                )
            )
    return groups, skipped


def merge_cohorts(*cohort_groups: Sequence[SemanticGroup]) -> list[SemanticGroup]:
    """One group per id with the forms of every cohort (first-seen order of groups)."""
    merged: dict[str, SemanticGroup] = {}
    for groups in cohort_groups:
        for g in groups:
            have = merged.get(g.group_id)
            if have is None:
                merged[g.group_id] = g.model_copy(deep=True)
            else:
                if have.answer.values != g.answer.values:
                    raise ValueError(f"group {g.group_id}: answers differ between cohorts")
                known = {f.form_id for f in have.forms}
                have.forms.extend(f for f in g.forms if f.form_id not in known)
    return list(merged.values())
