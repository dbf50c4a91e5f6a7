"""RAGProbe's scenarios with SQL truth: built from GRAMMAR semantic groups, no LLM needed.

The generator's groups already have what RAGProbe asks an LLM for — a question and an answer a
document states — with the database as the judge of truth. From them:

* **number / date** (S1, S2): groups whose answer column is numeric / a date;
* **multiple choice** (S3): the group's question with its answer among distractors drawn from
  the other DISTINCT values of the same column; exactly one option is right by construction;
* **several questions, one entity** (S4) / **several entities** (S5): 2–3 groups about the same
  entity / about different entities asked as one question, every part required; the combined
  SQL returns all parts in one row;
* **absent entity** (S6): a group's question about a name that occurs neither in the database
  nor in the corpus; only a refusal is right.

With a corpus, an S1–S5 item is kept only when a document states its answer next to its entity
(RAGProbe's premise "the answer is in the corpus"), and that document's chunks are its provenance
for the validity check; S6 names are checked absent from every document.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.pipeline import QueryPort
from groundwatch.core.generation.realize import fill_text, template_parts
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.templates import SqlTemplate, ident, render
from groundwatch.core.judging.gold import prepare_gold
from groundwatch.core.judging.normalize import normalize, padded
from groundwatch.core.model import AnswerType, Expected, SemanticGroup
from groundwatch.core.scenarios.chunking import Chunk, chunk_corpus
from groundwatch.core.scenarios.item_checks import (
    Drop,
    contained_either_way,
    mentions,
    supported,
)
from groundwatch.core.scenarios.items import (
    EXPECTED_REFUSAL,
    LETTERS,
    ScenarioRun,
    combine_sql,
    options_text,
    scenario_group,
    scenario_group_id,
)
from groundwatch.core.scenarios.spec import Chunking, GroundedKind, ScenarioSpec

_KIND_TYPE = {
    GroundedKind.NUMBER: AnswerType.NUMBER,
    GroundedKind.DATE: AnswerType.DATE,
    GroundedKind.TEXT: AnswerType.TEXT,
}


@dataclass(slots=True)
class GroundedSource:
    """What grounded generation reads: the database (through a read-only query port), its
    schema, the SQL templates, their semantic groups with one interrogative form each, those
    forms' text templates (to ask about absent names) and, optionally, the corpus."""

    port: QueryPort
    schema: SchemaInfo
    templates: Sequence[SqlTemplate]
    groups: Sequence[SemanticGroup]
    text_templates: Mapping[str, Sequence[str]]
    corpus: Mapping[str, str] | None = None
    dataset_id: str = "scenarios"


@dataclass(slots=True)
class _Part:
    """One base group as a candidate part of a scenario item."""

    group: SemanticGroup
    template: SqlTemplate
    question: str
    value: str
    type: AnswerType
    entity: tuple[Any, ...]
    docs: list[str] = field(default_factory=list)

    def sentence(self) -> str:
        """The part's answer as a sentence ("The budget of the project named 'X' is 100.")."""
        ref = fill_text(template_parts(self.template)["the_ref"], self.template, self.group.params)
        return f"The {self.template.answer_label or 'value'} of {ref} is {self.value}."

    def provenance(self) -> dict[str, Any]:
        return {
            "group_id": self.group.group_id,
            "template_id": self.template.template_id,
            "sql": self.group.sql,
            "params": dict(self.group.params),
            "question": self.question,
            "values": list(self.group.answer.values),
            "documents": list(self.docs),
        }


class _Corpus:
    """The corpus normalized once: which documents state a group's answer next to its entity."""

    def __init__(self, corpus: Mapping[str, str]) -> None:
        self.texts = dict(corpus)
        self.norm = {d: padded(normalize(t)) for d, t in self.texts.items()}
        self._chunks: dict[Chunking, dict[str, list[Chunk]]] = {}

    def mentioning(self, phrase: str, among: Sequence[str] | None = None) -> list[str]:
        needle = padded(normalize(phrase))
        ids = among if among is not None else sorted(self.norm)
        return [d for d in ids if needle.strip() and needle in self.norm[d]]

    def supporting(self, entity_values: Sequence[str], value: str, kind: AnswerType) -> list[str]:
        docs: list[str] | None = None
        for v in entity_values:
            docs = self.mentioning(v, docs)
        candidates = docs if docs is not None else sorted(self.norm)
        return [d for d in candidates if supported(value, self.texts[d], kind)]

    def chunks(self, chunking: Chunking) -> dict[str, list[Chunk]]:
        got = self._chunks.get(chunking)
        if got is None:
            got = self._chunks[chunking] = chunk_corpus(self.texts, chunking)
        return got

    def source_chunks(self, parts: Sequence[_Part], chunking: Chunking) -> list[Chunk]:
        """The chunks an item was made from: per part, the chunks of its documents that state the
        answer (with the entity when a chunk holds both)."""
        by_doc = self.chunks(chunking)
        out: dict[str, Chunk] = {}
        for p in parts:
            names = [format_value(v) for v in p.group.params.values()]
            for d in p.docs:
                chunks = by_doc.get(d, [])
                stating = [c for c in chunks if supported(p.value, c.text, p.type)]
                both = [c for c in stating if all(mentions(c.text, n) for n in names)]
                for c in both or stating or chunks:
                    out[c.chunk_id] = c
        return list(out.values())


class GroundedBuilder:
    """Builds every requested scenario from one :class:`GroundedSource`."""

    def __init__(self, source: GroundedSource, *, seed: int = 0) -> None:
        self.src = source
        self.seed = seed
        self.by_template = {t.template_id: t for t in source.templates}
        self.corpus = _Corpus(source.corpus) if source.corpus is not None else None
        self._parts: list[_Part] | None = None
        self._distinct: dict[tuple[str, str], list[Any]] = {}

    # ------------------------------------------------------------------ shared pieces
    def parts(self) -> list[_Part]:
        """Every base group with one form and a single-value answer, with its documents."""
        if self._parts is None:
            out: list[_Part] = []
            for g in self.src.groups:
                t = self.by_template.get(g.template_id or "")
                if t is None or len(g.forms) != 1 or len(g.answer.values) != 1:
                    continue
                kind = g.answer.types[0] if g.answer.types else AnswerType.TEXT
                # the row the placeholders name, whatever table the answer comes from: "the
                # latest start date of director X's projects" is about employee X too
                entity = (*((s.table, s.column) for s in t.slots), *g.params.values())
                part = _Part(g, t, g.forms[0].text, g.answer.values[0], kind, entity)
                if self.corpus is not None:
                    names = [format_value(v) for v in g.params.values()]
                    part.docs = self.corpus.supporting(names, part.value, kind)
                out.append(part)
            self._parts = out
        return self._parts

    def _supported(self, part: _Part, run: ScenarioRun, scenario: str) -> bool:
        if self.corpus is not None and not part.docs:
            run.drop(scenario, Drop.NOT_IN_CORPUS)
            return False
        return True

    def distinct_values(self, table: str, column: str) -> list[Any]:
        """The DISTINCT non-null values of one column (what distractors and names come from)."""
        key = (table, column)
        if key not in self._distinct:
            col = exp.Column(this=ident(column))
            tree = exp.Select(
                expressions=[col.copy()],
                distinct=exp.Distinct(),
                from_=exp.From(this=exp.Table(this=ident(table))),
                where=exp.Where(this=exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))),
                order=exp.Order(expressions=[exp.Ordered(this=col.copy())]),
            )
            self._distinct[key] = [
                r[0] for r in self.src.port.rows(render(tree, self.src.schema.dialect))
            ]
        return self._distinct[key]

    def _rng(self, spec: ScenarioSpec) -> random.Random:
        return random.Random(f"{self.seed}:{spec.id}")

    def _group(
        self,
        spec: ScenarioSpec,
        parts: Sequence[_Part],
        question: str,
        expected: Expected,
        sql: str,
        params: Mapping[str, Any],
        extra: dict[str, Any],
    ) -> SemanticGroup:
        chunks = self.corpus.source_chunks(parts, spec.chunking) if self.corpus is not None else []
        provenance = {
            "source": "sql",
            "sql": sql,
            "params": dict(params),
            "groups": [p.group.group_id for p in parts],
            "parts": [p.provenance() for p in parts],
            "chunks": [c.provenance() for c in chunks],
            "corpus_checked": self.corpus is not None,
            **extra,
        }
        docs = sorted({d for p in parts for d in (p.docs or p.group.relevant_doc_ids)})
        return scenario_group(
            spec,
            group_id=scenario_group_id(spec.id, {"sql": sql, "params": params}),
            question=question,
            expected=expected,
            provenance=provenance,
            dataset_id=self.src.dataset_id,
            sql=sql,
            params=params,
            relevant_doc_ids=docs,
            template_id=parts[0].template.template_id if len(parts) == 1 else None,
        )

    # ------------------------------------------------------------------ the scenarios
    def build(self, spec: ScenarioSpec, run: ScenarioRun, max_items: int | None = None) -> None:
        if spec.grounded is None:
            run.note(spec.id, "no grounded variant defined; skipped")
            return
        limit = max_items if max_items is not None else spec.max_items
        kind = spec.grounded.kind
        if kind in _KIND_TYPE:
            self._single(spec, _KIND_TYPE[kind], run, limit)
        elif kind is GroundedKind.MULTIPLE_CHOICE:
            self._multiple_choice(spec, run, limit)
        elif kind in (GroundedKind.MULTI_SAME_ENTITY, GroundedKind.MULTI_CROSS_ENTITY):
            self._multi(spec, run, limit, same=kind is GroundedKind.MULTI_SAME_ENTITY)
        else:
            self._absent(spec, run, limit)

    def _single(self, spec: ScenarioSpec, kind: AnswerType, run: ScenarioRun, limit: int) -> None:
        pool = [p for p in self.parts() if p.type is kind]
        self._rng(spec).shuffle(pool)
        for p in pool:
            if run.kept(spec.id) >= limit:
                return
            if not self._supported(p, run, spec.id):
                continue
            expected = p.group.answer.model_copy()
            run.keep(
                self._group(
                    spec, [p], p.question, expected, p.group.sql, p.group.params,
                    {"expected_response": p.value},
                )
            )  # fmt: skip

    def _multiple_choice(self, spec: ScenarioSpec, run: ScenarioRun, limit: int) -> None:
        assert spec.grounded is not None
        n = spec.grounded.options
        pool = [p for p in self.parts() if p.type is AnswerType.TEXT]
        rng = self._rng(spec)
        rng.shuffle(pool)
        for p in pool:
            if run.kept(spec.id) >= limit:
                return
            if not self._supported(p, run, spec.id):
                continue
            sel = p.template.selected[0]
            others = [format_value(v) for v in self.distinct_values(sel.table, sel.column)]
            # distractors the source documents do not mention, so the right one stays unique there
            said = " ".join(self.corpus.texts[d] for d in p.docs) if self.corpus else ""
            fresh = [o for o in others if not (said and mentions(said, o))]
            picked = _distractors(p.value, fresh, n - 1, rng)
            if picked is None:
                run.drop(spec.id, Drop.TOO_FEW_DISTRACTORS)
                continue
            pos = rng.randrange(n)
            options = [*picked[:pos], p.value, *picked[pos:]]
            expected = p.group.answer.model_copy(update={"options": options})
            if prepare_gold(expected).correct_option != pos:
                run.drop(spec.id, Drop.BAD_OPTIONS)
                continue
            letter = LETTERS[pos]
            run.keep(
                self._group(
                    spec,
                    [p],
                    options_text(p.question, options),
                    expected,
                    p.group.sql,
                    p.group.params,
                    {
                        "expected_response": f"{letter}) {p.value}",
                        "correct_option": letter,
                        "options": options,
                        "distractors_from": f"DISTINCT {sel.table}.{sel.column}",
                    },
                )
            )

    def _multi(self, spec: ScenarioSpec, run: ScenarioRun, limit: int, *, same: bool) -> None:
        assert spec.grounded is not None
        lo, hi = spec.grounded.parts
        rng = self._rng(spec)
        pool = [p for p in self.parts() if len(p.group.params) >= 1]
        ok = [p for p in pool if self.corpus is None or p.docs]
        if len(ok) < len(pool):
            run.note(spec.id, f"{len(pool) - len(ok)} groups left out: answer not in the corpus")
        if same:
            by_entity: dict[tuple[Any, ...], list[_Part]] = {}
            for p in ok:
                if len(p.template.slots) == 1:
                    by_entity.setdefault(p.entity, []).append(p)
            entities = sorted(by_entity, key=repr)
            rng.shuffle(entities)
            for e in entities:
                if run.kept(spec.id) >= limit:
                    return
                members = by_entity[e]
                rng.shuffle(members)
                chosen = self._choose(members, rng.randint(lo, hi), same=True)
                if chosen is None:
                    run.drop(spec.id, Drop.TOO_FEW_PARTS)
                    continue
                self._keep_multi(spec, chosen, run, same=True)
            return
        rng.shuffle(ok)
        used: set[str] = set()
        while run.kept(spec.id) < limit:
            free = [p for p in ok if p.group.group_id not in used]
            if len(free) < lo:
                return
            chosen = self._choose(free, rng.randint(lo, hi), same=False)
            if chosen is None:
                run.drop(spec.id, Drop.TOO_FEW_PARTS)
                return
            used.update(p.group.group_id for p in chosen)
            self._keep_multi(spec, chosen, run, same=False)

    def _choose(self, members: Sequence[_Part], want: int, *, same: bool) -> list[_Part] | None:
        """Greedily ``want`` parts (at least two) that can be asked together: different
        templates, answers that differ and that no question gives away; for one entity a
        document stating them all, for several entities different entities and documents."""
        chosen: list[_Part] = []
        docs: set[str] | None = None
        for p in members:
            if len(chosen) == want:
                break
            if any(c.template.template_id == p.template.template_id for c in chosen):
                continue
            if any(contained_either_way(c.value, p.value) for c in chosen):
                continue
            if any(mentions(c.question, p.value) or mentions(p.question, c.value) for c in chosen):
                continue
            if mentions(p.question, p.value):
                continue
            if same:
                if self.corpus is not None:
                    common = set(p.docs) if docs is None else docs & set(p.docs)
                    if not common:
                        continue
                    docs = common
            else:
                if any(c.entity == p.entity for c in chosen):
                    continue
                if self.corpus is not None and any(set(c.docs) & set(p.docs) for c in chosen):
                    continue
            chosen.append(p)
        if len(chosen) < 2:
            return None
        if same and docs is not None:
            # the parts are shared with other scenarios: copies carry the common documents
            return [replace(p, docs=sorted(docs)) for p in chosen]
        return chosen

    def _keep_multi(
        self, spec: ScenarioSpec, parts: Sequence[_Part], run: ScenarioRun, *, same: bool
    ) -> None:
        question = " ".join(p.question for p in parts)
        sql, params = combine_sql(
            [(p.group.sql, p.group.params) for p in parts], self.src.schema.dialect
        )
        expected = Expected(values=[p.value for p in parts], types=[p.type for p in parts])
        run.keep(
            self._group(
                spec, parts, question, expected, sql, params,
                {
                    "expected_response": " ".join(p.sentence() for p in parts),
                    "entities": "one" if same else "several",
                },
            )
        )  # fmt: skip

    def _absent(self, spec: ScenarioSpec, run: ScenarioRun, limit: int) -> None:
        """Questions of identifier-keyed templates about names nobody has: recombined from the
        words of real names (so they read like the domain), checked against the column's values,
        the template's own SQL (no row) and every corpus document (no mention)."""
        by_column: dict[tuple[str, str], list[SqlTemplate]] = {}
        for t in self.src.templates:
            named = len(t.slots) == 1 and t.slots[0].param in t.identifier_slots
            if named and self.src.text_templates.get(t.template_id):
                by_column.setdefault((t.slots[0].table, t.slots[0].column), []).append(t)
        if not by_column:
            run.note(spec.id, "no template asks about a named entity; no absent-name questions")
            return
        rng = self._rng(spec)
        streams = {
            col: _recombined_names(
                [format_value(v) for v in self.distinct_values(*col)],
                random.Random(f"{self.seed}:{spec.id}:{col}"),
            )
            for col in sorted(by_column)
        }
        seen: set[str] = set()
        while run.kept(spec.id) < limit and streams:
            for col in sorted(streams):
                if run.kept(spec.id) >= limit:
                    return
                name = next(streams[col], None)
                if name is None:
                    del streams[col]
                    continue
                if normalize(name) in seen:
                    continue
                seen.add(normalize(name))
                t = rng.choice(by_column[col])
                param = t.slots[0].param
                if self.corpus is not None and self.corpus.mentioning(name):
                    run.drop(spec.id, Drop.NAME_EXISTS)
                    continue
                if list(self.src.port.rows(t.sql, {param: name})):  # read whole: closes the cursor
                    run.drop(spec.id, Drop.NAME_EXISTS)
                    continue
                text = rng.choice(list(self.src.text_templates[t.template_id]))
                question = fill_text(text, t, {param: name})
                params = {param: name}
                provenance = {
                    "source": "sql",
                    "sql": t.sql,
                    "params": params,
                    "groups": [],
                    "absent_entity": {"table": col[0], "column": col[1], "value": name},
                    "checked_absent_in": ["database", *(["corpus"] if self.corpus else [])],
                    "chunks": [],
                    "expected_response": EXPECTED_REFUSAL,
                }
                run.keep(
                    scenario_group(
                        spec,
                        group_id=scenario_group_id(spec.id, {"sql": t.sql, "params": params}),
                        question=question,
                        expected=Expected(answerable=False),
                        provenance=provenance,
                        dataset_id=self.src.dataset_id,
                        sql=t.sql,
                        params=params,
                        template_id=t.template_id,
                    )
                )


def _distractors(
    answer: str, values: Sequence[str], n: int, rng: random.Random
) -> list[str] | None:
    """``n`` values other than ``answer`` that neither contain nor are contained in it or each
    other (so a response naming one option never also names another)."""
    pool = sorted(set(values))
    rng.shuffle(pool)
    out: list[str] = []
    for v in pool:
        if len(out) == n:
            break
        if contained_either_way(v, answer) or any(contained_either_way(v, o) for o in out):
            continue
        out.append(v)
    return out if len(out) == n else None


def _recombined_names(values: Sequence[str], rng: random.Random) -> Iterator[str]:
    """Names that look like the column's names but are none of them: the first word of one
    value with the rest of another ("Harbour" + "Data Hall"); one-word values are paired."""
    existing = {normalize(v) for v in values}
    words = [v.split() for v in values if v.strip()]
    multi = [w for w in words if len(w) >= 2]
    pairs = [(i, j) for i in range(len(words)) for j in range(len(words)) if i != j]
    rng.shuffle(pairs)
    for i, j in pairs:
        a, b = words[i], words[j]
        if len(multi) >= 2:
            if len(a) < 2 or len(b) < 2:
                continue
            name = " ".join([*a[:1], *b[1:]])
        else:
            name = f"{a[0]} {b[-1]}"
        if normalize(name) not in existing:
            yield name
