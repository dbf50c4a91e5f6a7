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
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.naming import is_surrogate_name
from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo
from groundwatch.core.generation.sql_checks import paper_to_named, validate_sql
from groundwatch.core.generation.templates import TEXT_TOKEN, SqlTemplate
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


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One SQL template of the tool's files, with what it takes to read its QA entries.

    ``extras``: the columns the ``_with_ids`` variant projects after the answer (the tool writes
    its rows as answer + those columns); ``patterns``: the text templates as regular expressions
    that capture the placeholder values from a text query.
    """

    template: SqlTemplate
    extras: tuple[tuple[str, str], ...] | None
    patterns: tuple[re.Pattern[str], ...]

    def params_from_row(self, row: Sequence[Any]) -> dict[str, Any] | None:
        """Placeholder values carried by the row itself (the ``_with_ids`` extras), if all are."""
        t = self.template
        n_sel = len(t.selected)
        if self.extras is None:
            # rows without a known layout: answer + placeholder values, as in the Aurp files
            if len(row) != n_sel + len(t.slots):
                return None
            return dict(zip(t.params, row[n_sel:], strict=True))
        if len(row) != n_sel + len(self.extras):
            return None
        out: dict[str, Any] = {}
        for s in t.slots:
            for i, (table, column) in enumerate(self.extras):
                if table.lower() == s.table.lower() and column.lower() == s.column.lower():
                    out[s.param] = row[n_sel + i]
        return out if len(out) == len(t.slots) else None

    def params_from_texts(self, texts: Sequence[str]) -> dict[str, str] | None:
        """Placeholder values read off the text queries with the text templates."""
        for text in texts:
            for pattern in self.patterns:
                m = pattern.fullmatch(text)
                if m is not None:
                    return {k: v for k, v in m.groupdict().items()}
        return None


def _text_pattern(text_template: str, template: SqlTemplate) -> re.Pattern[str]:
    r"""``Industry of '[company.Name]'.`` → ``Industry\ of\ '(?P<name>.+?)'\.``."""
    by_token = {s.grammar_token(): s.param for s in template.slots}
    out = []
    pos = 0
    used: set[str] = set()
    for m in TEXT_TOKEN.finditer(text_template):
        out.append(re.escape(text_template[pos : m.start()]))
        param = by_token.get(m.group(0))
        if param is None:
            out.append(re.escape(m.group(0)))
        elif param in used:
            out.append(f"(?P={param})")
        else:
            out.append(f"(?P<{param}>.+?)")
            used.add(param)
        pos = m.end()
    out.append(re.escape(text_template[pos:]))
    return re.compile("".join(out), re.DOTALL)


def split_id_columns(sql: str, dialect: str = "mysql") -> tuple[str, list[tuple[str, str]]]:
    """A ``_with_ids`` template → the template it extends and the columns it adds.

    The tool's ``sql_templates_with_ids.json`` projects, after the answer, identifiers of the rows
    read: a condition column (``SELECT Location, Name … WHERE Name = '[Client.Name]'``) or record
    ids (``SELECT Industry, Company_ID …``). Trailing projections that are either are split off;
    what remains is the question's answer.
    """
    named, mapping = paper_to_named(sql)
    tree = sqlglot.parse_one(named, read=dialect)
    if not isinstance(tree, exp.Select):
        return sql, []
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    default = next(iter(aliases.values()), "")
    conditions = {(t.lower(), c.lower()) for t, c in mapping.values()}
    for eq in tree.find_all(exp.EQ):
        for side in (eq.left, eq.right):
            if isinstance(side, exp.Column) and isinstance(
                eq.right if side is eq.left else eq.left, exp.Placeholder
            ):
                conditions.add((aliases.get(side.table, default).lower(), side.name.lower()))
    extras: list[tuple[str, str]] = []
    exprs = list(tree.expressions)
    while len(exprs) > 1:
        last = exprs[-1]
        col = last.this if isinstance(last, exp.Alias) else last
        if not isinstance(col, exp.Column):
            break
        table = aliases.get(col.table, default) if col.table else default
        if (table.lower(), col.name.lower()) not in conditions and not is_surrogate_name(col.name):
            break
        extras.insert(0, (table, col.name))
        exprs.pop()
    if not extras:
        return sql, []
    tree.set("expressions", exprs)
    base = tree.sql(dialect=dialect)
    for param, (table, column) in mapping.items():
        base = re.sub(rf":{re.escape(param)}\b", f"'[{table}.{column}]'", base)
    return base + ";", extras


def _candidates(
    sql_templates: Sequence[str],
    with_ids: Sequence[str] | None,
    text_templates: Mapping[str, Sequence[str]] | None,
    dialect: str,
) -> list[_Candidate]:
    bases: list[str] = []
    extras: list[tuple[tuple[str, str], ...] | None] = []
    for i, sql in enumerate(sql_templates):
        base, own = split_id_columns(sql, dialect)
        ids = with_ids[i] if with_ids is not None and i < len(with_ids) else None
        if ids is not None:
            _, added = split_id_columns(ids, dialect)
            extras.append(tuple(added))
        else:
            extras.append(tuple(own) if own else None)
        bases.append(base)
    schema = schema_from_sql(bases, dialect)
    out: list[_Candidate] = []
    for sql, base, ex in zip(sql_templates, bases, extras, strict=True):
        t = validate_sql(base, schema, origin="import", allow_surrogates=True)
        tts = (text_templates or {}).get(sql) or (text_templates or {}).get(base) or ()
        out.append(_Candidate(t, ex, tuple(_text_pattern(x, t) for x in tts)))
    return out


def _params_for(c: _Candidate, row: Sequence[Any], texts: Sequence[str]) -> dict[str, Any] | None:
    params = c.params_from_texts(texts) if c.patterns else None
    return params if params is not None else c.params_from_row(row)


def import_qa_data(
    sql_templates: Sequence[str],
    qa_data: Sequence[Sequence[Any]],
    cohort: str,
    *,
    text_templates: Mapping[str, Sequence[str]] | None = None,
    with_ids: Sequence[str] | None = None,
    dataset_id: str = "grammar",
    dialect: str = "mysql",
    examples: dict[str, list[str]] | None = None,
) -> tuple[list[SemanticGroup], dict[str, int]]:
    """Semantic groups of one ``QADataGenerator`` file of the tool (``<cohort>.json`` or
    ``<cohort>_with_ids.json``).

    Each entry's placeholder values are read off its text queries with the text templates (when
    given), else from the row when the ``_with_ids`` columns include the condition columns (the
    tool writes rows as answer + ``_with_ids`` columns; without ``with_ids`` the row's trailing
    values are taken as the placeholder values, as in the Aurp files). Each per-template list is
    matched to the SQL template whose text templates read its entries, else taken in file order.
    Returns the groups and counts of what was skipped (``several_answers``, ``unmatched``);
    ``examples`` collects up to five skipped entries per reason.
    """
    cands = _candidates(sql_templates, with_ids, text_templates, dialect)
    skipped: dict[str, int] = {"several_answers": 0, "unmatched": 0}
    groups: list[SemanticGroup] = []

    def skip(reason: str, entry: Any) -> None:
        skipped[reason] += 1
        if examples is not None:
            kept = examples.setdefault(reason, [])
            if len(kept) < 5:
                kept.append(f"{cohort}: {str(entry)[:200]}")

    for i, entries in enumerate(qa_data):
        order = ([cands[i]] if i < len(cands) else []) + [c for j, c in enumerate(cands) if j != i]
        chosen = _choose(order, entries)
        for entry in entries:
            answer_text, texts = entry[0], list(entry[1])
            rows = ast.literal_eval(answer_text)
            if len(rows) != 1:
                skip("several_answers", entry)
                continue
            row = tuple(rows[0])
            c = chosen
            params = _params_for(c, row, texts) if c is not None else None
            if c is None or params is None:
                skip("unmatched", entry)
                continue
            t = c.template
            answer = row[: len(t.selected)]
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


def _choose(order: Sequence[_Candidate], entries: Sequence[Any]) -> _Candidate | None:
    """The first candidate that reads the list's first entries (answer width and values)."""
    for c in order:
        ok = 0
        for entry in entries[:3]:
            rows = ast.literal_eval(entry[0])
            if len(rows) != 1:
                continue
            row = tuple(rows[0])
            n_sel = len(c.template.selected)
            if c.extras is not None and len(row) != n_sel + len(c.extras):
                break
            if c.extras is None and len(row) not in (n_sel, n_sel + len(c.template.slots)):
                break
            if _params_for(c, row, list(entry[1])) is None:
                break
            ok += 1
        else:
            if ok:
                return c
    return None


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
