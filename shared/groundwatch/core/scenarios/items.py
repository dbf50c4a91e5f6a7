"""Scenario items are semantic groups: one text form, a scenario tag, provenance.

So a scenario probe travels the same path as a GRAMMAR probe — generator, runner, judge,
analytics — and is told apart only by ``scenario`` (``S1``…``S6``) and its cohort. Group ids are
stable hashes of what the item was made from (the SQL and its values, or the chunks and the
question), never of the run, so the same item keeps its id and its history across runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from groundwatch.core.generation.templates import ident, parse_one, render
from groundwatch.core.model import Expected, SemanticGroup, TextForm, form_id_for, group_id_for
from groundwatch.core.scenarios.spec import ScenarioSpec

#: What an S6 response should say (RAGProbe Table 3: "Sorry, the system doesn't know the answer").
EXPECTED_REFUSAL = "I don't know: the documents contain no information that answers this question."

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def scenario_group_id(scenario: str, made_from: Mapping[str, Any]) -> str:
    """Stable id of a scenario item; distinct from any GRAMMAR group built from the same SQL."""
    return group_id_for(f"ragprobe:{scenario}", dict(made_from))


def scenario_group(
    spec: ScenarioSpec,
    *,
    group_id: str,
    question: str,
    expected: Expected,
    provenance: dict[str, Any],
    dataset_id: str,
    sql: str = "",
    params: Mapping[str, Any] | None = None,
    relevant_doc_ids: Sequence[str] = (),
    template_id: str | None = None,
) -> SemanticGroup:
    """The semantic group of one scenario item: one text form in the scenario's cohort."""
    cohort = spec.form_cohort
    return SemanticGroup(
        group_id=group_id,
        dataset_id=dataset_id,
        sql=sql,
        params=dict(params or {}),
        answer=expected,
        forms=[
            TextForm(form_id=form_id_for(group_id, cohort, question), cohort=cohort, text=question)
        ],
        relevant_doc_ids=sorted(set(relevant_doc_ids)),
        scenario=spec.id,
        template_id=template_id,
        provenance={"scenario_name": spec.name, **provenance},
    )


def options_text(question: str, options: Sequence[str]) -> str:
    """The question with its lettered options, as RAGProbe's S3 asks it."""
    listed = "; ".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(options))
    return f"{question} Options: {listed}."


def combine_sql(
    parts: Sequence[tuple[str, Mapping[str, Any]]], dialect: str
) -> tuple[str, dict[str, Any]]:
    """One query whose single row holds every part's answer: ``SELECT (part 1) AS part_1, …``.

    Each part is a single-row, single-column SQL template (the generator's singular-answer check
    made it so); its placeholders are renamed ``p<i>_<name>`` so parts about different entities
    do not collide. The result is what refreshing the item's answer re-runs, so a multi-part
    item keeps SQL truth like any other group.
    """
    params: dict[str, Any] = {}
    columns: list[exp.Expression] = []
    for i, (sql, values) in enumerate(parts, 1):
        tree = parse_one(sql, dialect)

        def rename(node: exp.Expression, i: int = i) -> exp.Expression:
            if isinstance(node, exp.Placeholder) and node.name:
                return exp.Placeholder(this=f"p{i}_{node.name}")
            return node

        renamed = tree.transform(rename)
        columns.append(exp.Alias(this=exp.Subquery(this=renamed), alias=ident(f"part_{i}")))
        params.update({f"p{i}_{k}": v for k, v in values.items()})
    return render(exp.Select(expressions=columns), dialect), params


@dataclass(slots=True)
class ScenarioRun:
    """What a generation run produced: the kept items and, per scenario, what was tried and what
    was dropped, by reason. Nothing that failed a check is ever in ``items``."""

    items: list[SemanticGroup] = field(default_factory=list)
    attempted: Counter[str] = field(default_factory=Counter)
    dropped: dict[str, Counter[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    _kept: Counter[str] = field(default_factory=Counter)

    def drop(self, scenario: str, reason: str) -> None:
        self.attempted[scenario] += 1
        self.dropped.setdefault(scenario, Counter())[str(reason)] += 1

    def keep(self, item: SemanticGroup) -> None:
        self.attempted[item.scenario] += 1
        self._kept[item.scenario] += 1
        self.items.append(item)

    def note(self, scenario: str, text: str) -> None:
        self.notes.setdefault(scenario, []).append(text)

    def kept(self, scenario: str) -> int:
        return self._kept[scenario]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per scenario: attempted, kept, dropped (total and by reason), notes."""
        ids = sorted(set(self.attempted) | set(self.dropped) | {g.scenario for g in self.items})
        out: dict[str, dict[str, Any]] = {}
        for s in ids:
            reasons = self.dropped.get(s, Counter())
            out[s] = {
                "attempted": self.attempted[s],
                "kept": self.kept(s),
                "dropped": sum(reasons.values()),
                "dropped_by_reason": dict(sorted(reasons.items())),
                "notes": list(self.notes.get(s, [])),
            }
        return out

    def extend(self, other: ScenarioRun) -> None:
        self.items.extend(other.items)
        self.attempted.update(other.attempted)
        self._kept.update(other._kept)
        for s, c in other.dropped.items():
            self.dropped.setdefault(s, Counter()).update(c)
        for s, n in other.notes.items():
            self.notes.setdefault(s, []).extend(n)
