"""GRAMMAR-Gen end to end (Algorithm 1), over a query port so the core needs no database driver.

SQL templates → text templates per cohort → fills with answers from one grouped query per
template → semantic groups, balanced to exactly k text forms per cohort. Every number the paper
reports for this stage (M SQL templates, N text templates, Q queries, groups) and every template
or fill that was dropped, with the reason, ends up in a :class:`StageSummary`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Protocol

from groundwatch.core.generation.answers import format_value, json_param, typed_answer
from groundwatch.core.generation.candidates import ColumnSample, candidate_queries, candidates_for
from groundwatch.core.generation.grouped import Fill, GroupedPlan, group_rows, plan
from groundwatch.core.generation.realize import compile_text, fill_compiled, realize
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate
from groundwatch.core.generation.validation import Rejection
from groundwatch.core.generation.verbalizers import Verbalizer
from groundwatch.core.model import SemanticGroup, form_id_for, group_id_for

#: text templates: SQL template id → cohort → text templates (with paper placeholders)
TextTemplates = Mapping[str, Mapping[str, Sequence[str]]]


class QueryPort(Protocol):
    """Runs one read-only SQL text with bound parameters and streams its rows."""

    def rows(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> Iterator[Sequence[Any]]: ...


@dataclass(slots=True)
class StageSummary:
    """The stage counts of GRAMMAR Table 2 plus everything that was dropped and why.

    ``sql_templates`` = M (templates that produced at least one group), ``text_templates`` = N per
    cohort (over those templates, before balancing), ``queries`` = Q (filled SQL queries with one
    answer), ``groups`` (after balancing), ``text_queries`` per cohort (= groups × k).
    """

    sql_templates_proposed: int = 0
    sql_templates: int = 0
    text_templates: dict[str, int] = field(default_factory=dict)
    combinations: int = 0
    queries: int = 0
    groups: int = 0
    text_queries: dict[str, int] = field(default_factory=dict)
    rejected_templates: Counter[str] = field(default_factory=Counter)
    dropped_fills: Counter[str] = field(default_factory=Counter)
    grouped_query_templates: int = 0
    per_combination_templates: int = 0
    sql_statements: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sql_templates_proposed": self.sql_templates_proposed,
            "sql_templates": self.sql_templates,
            "text_templates": dict(self.text_templates),
            "combinations": self.combinations,
            "queries": self.queries,
            "groups": self.groups,
            "text_queries": dict(self.text_queries),
            "rejected_templates": dict(self.rejected_templates),
            "dropped_fills": dict(self.dropped_fills),
            "grouped_query_templates": self.grouped_query_templates,
            "per_combination_templates": self.per_combination_templates,
            "sql_statements": self.sql_statements,
        }


@dataclass(slots=True)
class GenerationResult:
    groups: list[SemanticGroup]
    templates: list[SqlTemplate]
    text_templates: dict[str, dict[str, list[str]]]
    summary: StageSummary


def offline_text_templates(
    templates: Sequence[SqlTemplate], verbalizers: Mapping[str, Verbalizer], cohorts: Sequence[str]
) -> dict[str, dict[str, list[str]]]:
    """Text templates from the deterministic realizer for every template and cohort."""
    missing = [c for c in cohorts if c not in verbalizers]
    if missing:
        raise KeyError(f"no verbalizer for cohorts {missing}; known: {sorted(verbalizers)}")
    return {t.template_id: {c: realize(t, verbalizers[c]) for c in cohorts} for t in templates}


def balance(texts: Sequence[str], k: int, key: str) -> list[str] | None:
    """Exactly ``k`` of the distinct text templates (None if there are fewer).

    The choice is seeded by ``key`` (template and cohort) so it is stable across runs yet does not
    always take the same pattern positions for every template.
    """
    distinct = list(dict.fromkeys(texts))
    if len(distinct) < k:
        return None
    picked = sorted(random.Random(key).sample(range(len(distinct)), k))
    return [distinct[i] for i in picked]


def _combinations(port: QueryPort, grouped: GroupedPlan, summary: StageSummary) -> int:
    total = 1
    for sql in grouped.distinct_sql.values():
        summary.sql_statements += 1
        row = next(iter(port.rows(sql)), None)
        total *= int(row[0]) if row else 0
    return total


def _per_combination(
    port: QueryPort, grouped: GroupedPlan, summary: StageSummary
) -> Iterator[Fill]:
    """The paper's own method (one bound query per combination) for templates the grouped rewrite
    cannot express; also what the benchmark compares against."""
    t = grouped.template
    values: list[list[Any]] = []
    for s in t.slots:
        summary.sql_statements += 1
        values.append([r[0] for r in port.rows(grouped.values_sql[s.param])])
    for combo in product(*values):
        params = dict(zip(t.params, combo, strict=True))
        summary.sql_statements += 1
        answers = list(dict.fromkeys(tuple(r) for r in port.rows(t.sql, params)))
        if answers:
            yield Fill(params, answers[0], len(answers))


def iter_groups(
    port: QueryPort,
    schema: SchemaInfo,
    templates: Sequence[SqlTemplate],
    text_templates: TextTemplates,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    summary: StageSummary | None = None,
    on_template: Callable[[SqlTemplate, int], None] | None = None,
) -> Iterator[SemanticGroup]:
    """Stream semantic groups, template by template (Algorithm 1, lines 4–17).

    ``summary`` is updated in place as groups are produced; ``on_template`` is called after each
    template with the number of groups it yielded (progress bars).
    """
    s = summary if summary is not None else StageSummary()
    s.sql_templates_proposed += len(templates)
    for t in templates:
        chosen: dict[str, list[str]] = {}
        per_cohort = text_templates.get(t.template_id, {})
        for c in cohorts:
            picked = balance(per_cohort.get(c, ()), k, f"{t.template_id}:{c}")
            if picked is None:
                break
            chosen[c] = picked
        if len(chosen) != len(cohorts):
            s.rejected_templates[Rejection.TOO_FEW_TEXT] += 1
            if on_template:
                on_template(t, 0)
            continue
        produced = yield from _groups_of(port, schema, t, chosen, k, dataset_id, s)
        if produced:
            s.sql_templates += 1
            for c in cohorts:
                s.text_templates[c] = s.text_templates.get(c, 0) + len(
                    list(dict.fromkeys(per_cohort.get(c, ())))
                )
        if on_template:
            on_template(t, produced)


def _groups_of(
    port: QueryPort,
    schema: SchemaInfo,
    t: SqlTemplate,
    chosen: dict[str, list[str]],
    k: int,
    dataset_id: str,
    s: StageSummary,
) -> Generator[SemanticGroup, None, int]:
    grouped = plan(t, schema)
    combos = _combinations(port, grouped, s)
    if grouped.sql is not None:
        if t.on_multiple == "reject":
            s.sql_statements += 1
            if _has_multiple(port, grouped):
                s.rejected_templates[Rejection.MULTIPLE_ANSWERS] += 1
                return 0
        s.grouped_query_templates += 1
        s.sql_statements += 1
        fills: Iterator[Fill] = group_rows(port.rows(grouped.sql), grouped)
    else:
        s.per_combination_templates += 1
        if t.on_multiple == "reject":
            buffered = list(_per_combination(port, grouped, s))
            if any(f.n_answers > 1 for f in buffered):
                s.rejected_templates[Rejection.MULTIPLE_ANSWERS] += 1
                return 0
            fills = iter(buffered)
        else:
            fills = _per_combination(port, grouped, s)
    kinds = tuple(sel.kind for sel in t.selected)
    samples = _candidate_samples(port, t, schema, s)
    compiled = [(c, [compile_text(tt, t) for tt in texts]) for c, texts in chosen.items()]
    seen = produced = 0
    for fill in fills:
        seen += 1
        if fill.n_answers > 1:
            s.dropped_fills[Rejection.MULTIPLE_ANSWERS] += 1
            continue
        answer = fill.answer
        if any(v is None for v in answer):
            s.dropped_fills["null_answer"] += 1
            continue
        values, types = typed_answer(answer, kinds)
        params = {p: json_param(v) for p, v in fill.params.items()}
        shown = [format_value(v) for v in fill.params.values()]
        gid = group_id_for(t.sql, params)
        forms: list[dict[str, str]] = []
        distinct = True
        for c, parts in compiled:
            texts = [fill_compiled(pt, shown) for pt in parts]
            distinct = distinct and len(set(texts)) == k
            forms.extend({"form_id": form_id_for(gid, c, x), "cohort": c, "text": x} for x in texts)
        if not distinct:
            s.dropped_fills["duplicate_forms"] += 1
            continue
        s.queries += 1
        s.groups += 1
        for c, _ in compiled:
            s.text_queries[c] = s.text_queries.get(c, 0) + k
        produced += 1
        # one validation call per group (pydantic-core validates the nested forms in Rust):
        # building eight models one by one costs more than the grouped query itself
        yield SemanticGroup.model_validate(
            {
                "group_id": gid,
                "dataset_id": dataset_id,
                "sql": t.sql,
                "params": params,
                "answer": {
                    "values": values,
                    "types": types,
                    "candidates": candidates_for(samples, values),
                },
                "forms": forms,
                "template_id": t.template_id,
            }
        )
    s.combinations += combos
    s.dropped_fills["no_answer"] += max(0, combos - seen)
    if produced == 0 and seen == 0:
        s.rejected_templates[Rejection.NO_FILLS] += 1
    return produced


def _candidate_samples(
    port: QueryPort, t: SqlTemplate, schema: SchemaInfo, s: StageSummary
) -> list[ColumnSample | None]:
    """Per answer column, a bounded sample of its distinct values (one streamed query each)."""
    out: list[ColumnSample | None] = []
    for sql in candidate_queries(t, schema):
        if sql is None:
            out.append(None)
            continue
        s.sql_statements += 1
        out.append(ColumnSample.of(r[0] for r in port.rows(sql)))
    return out


def _has_multiple(port: QueryPort, grouped: GroupedPlan) -> bool:
    """One aggregate query: does any fill have more than one distinct answer?"""
    assert grouped.multi_sql is not None
    return next(iter(port.rows(grouped.multi_sql)), None) is not None


def build_groups(
    port: QueryPort,
    schema: SchemaInfo,
    templates: Sequence[SqlTemplate],
    text_templates: TextTemplates,
    *,
    k: int = 3,
    cohorts: Sequence[str] = ("short", "long"),
    dataset_id: str = "default",
    on_template: Callable[[SqlTemplate, int], None] | None = None,
) -> GenerationResult:
    """All groups in memory, with the stage summary and the templates that produced them."""
    summary = StageSummary()
    groups = list(
        iter_groups(
            port,
            schema,
            templates,
            text_templates,
            k=k,
            cohorts=cohorts,
            dataset_id=dataset_id,
            summary=summary,
            on_template=on_template,
        )
    )
    used = {g.template_id for g in groups}
    kept = [t for t in templates if t.template_id in used]
    texts = {
        t.template_id: {c: list(v) for c, v in text_templates[t.template_id].items()} for t in kept
    }
    return GenerationResult(groups, kept, texts, summary)
