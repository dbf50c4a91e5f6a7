"""GRAMMAR-Gen end to end (Algorithm 1), over a query port so the core needs no database driver.

SQL templates → text templates per cohort → fills with answers from one grouped query per
template → semantic groups, balanced to exactly k text forms per cohort. Every number the paper
reports for this stage (M SQL templates, N text templates, Q queries, groups) and every template
or fill that was dropped, with the reason, ends up in a :class:`StageSummary`.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, product
from typing import Any, Protocol

from groundwatch.core.generation import abbreviations
from groundwatch.core.generation.answers import (
    date_text,
    format_value,
    json_param,
    kind_of_value,
    typed_answer,
    value_renderer,
)
from groundwatch.core.generation.candidates import (
    ColumnSample,
    RowValues,
    candidate_queries,
    domain_record,
    entity_attributes,
    entity_attributes_query,
    entity_query,
    kin_queries,
    referencing_attributes,
    referencing_queries,
)
from groundwatch.core.generation.grouped import (
    Fill,
    GroupedPlan,
    group_rows,
    list_rows,
    plan,
    zero_rows,
)
from groundwatch.core.generation.lexicon import Lexicon, Thesaurus, schema_context
from groundwatch.core.generation.naming import spoken_as
from groundwatch.core.generation.realize import (
    compile_percent,
    compile_pieces,
    compile_text,
    people_nouns,
    realize,
    vocabulary,
)
from groundwatch.core.generation.schema import SchemaInfo
from groundwatch.core.generation.sql_checks import Rejection
from groundwatch.core.generation.templates import Slot, SqlTemplate
from groundwatch.core.generation.verbalizers import Verbalizer
from groundwatch.core.generation.wording import in_other_words
from groundwatch.core.model import MAX_DOMAIN, AnswerType, SemanticGroup, group_id_hasher

#: text templates: SQL template id → cohort → text templates (with paper placeholders)
TextTemplates = Mapping[str, Mapping[str, Sequence[str]]]

#: Examples kept per drop or rejection reason in the stage summary.
MAX_EXAMPLES = 5
#: Most answers a fill may have to be kept as a list answer (``list_answers``): a longer list is
#: not a question anyone expects a complete answer to.
MAX_LIST_ANSWERS = 10


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
    list_answers: int = 0
    dropped_examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rejected_examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    k: int = 0
    #: Most distinct text templates any SQL template had in its poorest cohort (what --forms
    #: may be at most for that template to be used).
    most_text_templates: int = 0
    #: Tables and rows the source had after steering (None: not read from a database).
    source_tables: int | None = None
    source_rows: int | None = None

    def drop(self, reason: str, example: Mapping[str, Any], n: int = 1) -> None:
        """Count ``n`` dropped fills for ``reason`` and keep the first few as examples."""
        self.dropped_fills[reason] += n
        kept = self.dropped_examples.setdefault(reason, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(dict(example))

    def reject(self, reason: str, example: Mapping[str, Any]) -> None:
        """Count one rejected template for ``reason`` and keep the first few as examples."""
        self.rejected_templates[reason] += 1
        kept = self.rejected_examples.setdefault(reason, [])
        if len(kept) < MAX_EXAMPLES:
            kept.append(dict(example))

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
            "list_answers": self.list_answers,
            "dropped_examples": {k: list(v) for k, v in self.dropped_examples.items()},
            "rejected_examples": {k: list(v) for k, v in self.rejected_examples.items()},
        }


def why_empty(s: StageSummary) -> str:
    """Which stage dropped everything, when a generation produced no group: the one line a user
    needs to fix the input (more rows, a smaller --forms, list answers), never a silent 0."""
    if s.source_tables == 0:
        return (
            "the source database has no tables, or steering (--include-tables, --exclude-tables,"
            " --exclude-columns, --pii) excluded every one"
        )
    if s.source_rows == 0:
        return f"the source database's {s.source_tables} tables hold no rows"
    if s.sql_templates_proposed == 0:
        return (
            "no SQL template could be made: no table has a column that names its rows (text"
            " values distinct enough, see --key-ratio) and another column to ask about, or"
            " steering excluded every table or column"
        )
    too_few = s.rejected_templates.get(Rejection.TOO_FEW_TEXT, 0)
    if too_few == s.sql_templates_proposed:
        most = s.most_text_templates
        return (
            f"every one of the {too_few} SQL templates has fewer text templates per cohort than"
            f" --forms {s.k} asks for (at most {most}); use --forms {max(1, most)} or fewer"
        )
    if s.combinations == 0:
        return (
            "the tables hold no rows to fill the SQL templates with: the database is empty, or"
            " every row lacks the columns asked about"
        )
    if s.queries == 0 and s.dropped_fills:
        reasons = ", ".join(f"{r} {n}" for r, n in s.dropped_fills.most_common(3))
        hint = (
            " (a question with several answers is ambiguous; --allow-list-answers keeps such"
            " fills as list answers)"
            if any("answer" in r or "ambig" in r for r in s.dropped_fills)
            else ""
        )
        return f"every one of {s.combinations} fills was dropped: {reasons}{hint}"
    reasons = ", ".join(f"{r} {n}" for r, n in s.rejected_templates.most_common(3))
    return f"all {s.sql_templates_proposed} SQL templates were rejected or produced no group" + (
        f" ({reasons})" if reasons else ""
    )


@dataclass(slots=True)
class GenerationResult:
    groups: list[SemanticGroup]
    templates: list[SqlTemplate]
    text_templates: dict[str, dict[str, list[str]]]
    summary: StageSummary


def offline_text_templates(
    templates: Sequence[SqlTemplate],
    verbalizers: Mapping[str, Verbalizer],
    cohorts: Sequence[str],
    schema: SchemaInfo | None = None,
    lexicon: Lexicon | None = None,
) -> dict[str, dict[str, list[str]]]:
    """Text templates from the deterministic realizer for every template and cohort.

    With ``schema`` the long forms talk in the schema's own words (see
    :func:`~groundwatch.core.generation.realize.vocabulary`); with a ``lexicon`` too, the forms
    also name attributes the way people do (synonyms in the schema's sense, see
    :mod:`~groundwatch.core.generation.lexicon`) and "who"/"when" need it to tell people and
    events.
    """
    missing = [c for c in cohorts if c not in verbalizers]
    if missing:
        raise KeyError(f"no verbalizer for cohorts {missing}; known: {sorted(verbalizers)}")
    with spoken_as(abbreviations.of_schema(schema)):
        return _offline_text_templates(templates, verbalizers, cohorts, schema, lexicon)


def _offline_text_templates(
    templates: Sequence[SqlTemplate],
    verbalizers: Mapping[str, Verbalizer],
    cohorts: Sequence[str],
    schema: SchemaInfo | None,
    lexicon: Lexicon | None,
) -> dict[str, dict[str, list[str]]]:
    names: list[str] = []
    for tbl in schema.tables if schema is not None else ():
        names.append(tbl.name)
        names.extend(c.name for c in tbl.columns)
    thesaurus = Thesaurus(lexicon, schema_context(names)) if lexicon is not None else None
    shared = schema.shared_names if schema is not None else frozenset()
    people = people_nouns(schema)
    out: dict[str, dict[str, list[str]]] = {}
    for t in templates:
        vocab = vocabulary(t, schema)
        out[t.template_id] = {
            c: realize(t, verbalizers[c], vocab, thesaurus, shared, people) for c in cohorts
        }
    return out


def balance(
    texts: Sequence[str],
    k: int,
    key: str,
    other_words: Callable[[str], bool] | None = None,
) -> list[str] | None:
    """Exactly ``k`` of the distinct text templates (None if there are fewer).

    The choice is seeded by ``key`` (template and cohort) so it is stable across runs yet does not
    always take the same pattern positions for every template. ``other_words`` tells a text that
    names the attribute without the column's own words: with two or more picks, both kinds are
    kept when the cohort has both (a random draw could take only one), so every group is asked
    in the words people use and in the schema's.
    """
    distinct = list(dict.fromkeys(texts))
    if len(distinct) < k:
        return None
    rng = random.Random(key)
    picked = sorted(rng.sample(range(len(distinct)), k))
    if other_words is not None and k >= 2:
        kinds = [other_words(t) for t in distinct]
        for want in (True, False):
            have = [i for i in picked if kinds[i] is want]
            spare = [i for i in range(len(distinct)) if kinds[i] is want and i not in picked]
            if not have and spare:
                # swap out a pick of the kind there are most of
                many = [i for i in picked if kinds[i] is not want]
                picked.remove(many[-1])
                picked = sorted([*picked, spare[rng.randrange(len(spare))]])
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


#: A semantic group as its JSON-ready structure: :class:`SemanticGroup`'s fields in the model's
#: order with every default present, so ``orjson.dumps(record)`` is byte for byte what the model
#: serializes to and ``SemanticGroup.model_validate(record)`` is the group. Shared immutable parts
#: (an answer's types, its candidates) are tuples; treat a record as read-only.
GroupRecord = dict[str, Any]


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
    list_answers: bool = False,
) -> Iterator[SemanticGroup]:
    """Stream semantic groups, template by template (Algorithm 1, lines 4–17).

    ``summary`` is updated in place as groups are produced; ``on_template`` is called after each
    template with the number of groups it yielded (progress bars). ``list_answers`` keeps a fill
    with several answers (of a one-column template that drops such fills) as a list answer, every
    element required, instead of dropping it. The groups of :func:`iter_group_records`, each
    validated into its model (one pydantic-core call per group).
    """
    validate = SemanticGroup.model_validate
    for record in iter_group_records(
        port,
        schema,
        templates,
        text_templates,
        k=k,
        cohorts=cohorts,
        dataset_id=dataset_id,
        summary=summary,
        on_template=on_template,
        list_answers=list_answers,
    ):
        yield validate(record)


def iter_group_records(
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
    list_answers: bool = False,
) -> Iterator[GroupRecord]:
    """:func:`iter_groups` as JSON-ready :data:`GroupRecord` dicts, no model built.

    For the streaming write path (a JSONL file of a million groups): validating a model per group
    and serializing it again cost more than making the group; a record goes straight to
    ``orjson.dumps``. The same groups, forms, answers and summary as :func:`iter_groups`.
    """
    s = summary if summary is not None else StageSummary()
    s.sql_templates_proposed += len(templates)
    s.k = k
    kin_cache: KinCache = {}
    for t in templates:
        chosen: dict[str, list[str]] = {}
        per_cohort = text_templates.get(t.template_id, {})
        for c in cohorts:
            picked = balance(
                per_cohort.get(c, ()),
                k,
                f"{t.template_id}:{c}",
                partial(in_other_words, template=t),
            )
            if picked is None:
                break
            chosen[c] = picked
        s.most_text_templates = max(
            s.most_text_templates,
            min((len(dict.fromkeys(per_cohort.get(c, ()))) for c in cohorts), default=0),
        )
        if len(chosen) != len(cohorts):
            s.reject(
                Rejection.TOO_FEW_TEXT,
                {
                    "sql": t.sql,
                    "reason": "text templates per cohort: "
                    + ", ".join(f"{c} {len(dict.fromkeys(per_cohort.get(c, ())))}" for c in cohorts)
                    + f" (k = {k})",
                },
            )
            if on_template:
                on_template(t, 0)
            continue
        produced = yield from _records_of(
            port,
            schema,
            t,
            chosen,
            k,
            dataset_id,
            s,
            list_answers=list_answers,
            kin_cache=kin_cache,
        )
        if produced:
            s.sql_templates += 1
            for c in cohorts:
                s.text_templates[c] = s.text_templates.get(c, 0) + len(
                    list(dict.fromkeys(per_cohort.get(c, ())))
                )
        if on_template:
            on_template(t, produced)


def answer_in_question(
    values: Sequence[str], texts: Sequence[str], filled: Sequence[str] = ()
) -> str | None:
    """The answer value a question gives away, if any: asked "the album of the track 'Ace of
    Spades'", answer 'Ace of Spades', the question is its own answer.

    A value gives itself away when it occurs, as whole words, in a placeholder value the question
    carries (``filled``), or — if it is at least four characters long, so a one-letter grade "A"
    does not match the article — anywhere in a text form.
    """
    return _gives_away(values, [x.casefold() for x in texts], filled)


def _gives_away(
    values: Sequence[str], texts_low: Sequence[str], filled: Sequence[str]
) -> str | None:
    values_low = [x.casefold() for x in filled]
    for v in values:
        needle = v.strip().casefold()
        if not needle:
            continue
        # plain containment first (cheap); the word-boundary regex only confirms a hit
        in_values = [x for x in values_low if needle in x]
        in_texts = [x for x in texts_low if needle in x] if len(needle) >= 4 else []
        if not in_values and not in_texts:
            continue
        pattern = re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")
        if any(pattern.search(x) for x in (*in_values, *in_texts)):
            return v
    return None


#: Types a bound value keeps as it is in ``params`` (:func:`json_param` returns them unchanged).
_JSON_NATIVE = frozenset({str, int})
#: Distinct gold answers per template whose candidates (and whether the forms' wording holds
#: them) are kept: a column of a few hundred values repeats them over every fill; a unique
#: answer per fill just stops being cached.
_CANDIDATE_CACHE = 4096


def _records_of(
    port: QueryPort,
    schema: SchemaInfo,
    t: SqlTemplate,
    chosen: dict[str, list[str]],
    k: int,
    dataset_id: str,
    s: StageSummary,
    *,
    list_answers: bool = False,
    kin_cache: KinCache | None = None,
) -> Generator[GroupRecord, None, int]:
    """The groups of one template as records. Everything that is the same for every fill (text
    formatters, the group-id hasher, answer types, candidate lists per gold value, the words of
    the forms) is made once here; the loop per fill only formats, hashes and checks."""
    grouped = plan(t, schema)
    combos = _combinations(port, grouped, s)
    as_lists = (
        list_answers
        and t.on_multiple == "drop"
        and len(t.selected) == 1
        and grouped.list_sql is not None
    )
    fills = _fills(port, grouped, s, as_lists)
    if fills is None:
        return 0
    answers = _answers_of(port, t, schema, s, kin_cache)
    forms = _forms_of(t, schema, chosen, k)
    seen, produced = yield from _fill_records(
        fills, t, list(chosen), dataset_id, s, answers, forms, as_lists=as_lists
    )
    s.combinations += combos
    missing = max(0, combos - seen)
    if missing:
        s.drop(
            "no_answer", {"sql": t.sql, "combinations": combos, "without_answer": missing}, missing
        )
    if produced == 0 and seen == 0:
        s.reject(Rejection.NO_FILLS, {"sql": t.sql})
    return produced


def _fills(
    port: QueryPort, grouped: GroupedPlan, s: StageSummary, as_lists: bool
) -> Iterator[Fill] | None:
    """A template's fills with their answers: from its one grouped query, or one query per
    combination when it has none; None (the template rejected) when it rejects several answers
    and a fill has them."""
    t = grouped.template
    if grouped.sql is not None:
        if t.on_multiple == "reject":
            s.sql_statements += 1
            if _has_multiple(port, grouped):
                s.reject(Rejection.MULTIPLE_ANSWERS, {"sql": t.sql})
                return None
        s.grouped_query_templates += 1
        s.sql_statements += 1
        if as_lists:
            assert grouped.list_sql is not None
            return list_rows(port.rows(grouped.list_sql), grouped)
        fills = group_rows(port.rows(grouped.sql), grouped)
        if grouped.zero_sql is None:
            return fills
        s.sql_statements += 1
        return chain(fills, zero_rows(port.rows(grouped.zero_sql), grouped))
    s.per_combination_templates += 1
    if t.on_multiple == "reject":
        buffered = list(_per_combination(port, grouped, s))
        if any(f.n_answers > 1 for f in buffered):
            s.reject(Rejection.MULTIPLE_ANSWERS, {"sql": t.sql})
            return None
        return iter(buffered)
    return _per_combination(port, grouped, s)


@dataclass(slots=True, frozen=True)
class _Answers:
    """How a template's answers are typed and shown, and what the database holds around them:
    the same for every fill of the template."""

    #: per answer column its kind (None: read from the value)
    kinds: tuple[AnswerType | None, ...]
    renderers: list[Callable[[Any], str] | None]
    render_any: bool
    #: every column's kind declared: the same types for every fill, one shared tuple
    known_types: tuple[AnswerType, ...] | None
    #: why a fill with several answers is dropped when it is not MULTIPLE_ANSWERS
    shared_reason: str | None
    domains: list[dict[str, Any] | None]
    attributes: dict[tuple[str, ...], RowValues] | None
    entity_source: str
    entity_domain: dict[str, Any] | None


def _answers_of(
    port: QueryPort,
    t: SqlTemplate,
    schema: SchemaInfo,
    s: StageSummary,
    kin_cache: KinCache | None,
) -> _Answers:
    """The answer side of a template, once: types and renderers, then the answer columns'
    domains, the entity's attributes and its domain (a few streamed queries)."""
    # a flag's answer is yes/no text; a midnight date-time its date; money with its currency
    kinds = tuple(
        AnswerType.TEXT if sel.flag and sel.agg in ("", "max", "min") else sel.kind
        for sel in t.selected
    )
    renderers = [value_renderer(sel.kind, sel.flag, sel.column, sel.agg) for sel in t.selected]
    shared_reason = "shared_name" if any(sel.agg for sel in t.selected) else None
    declared = tuple(kd for kd in kinds if kd is not None)
    samples = _candidate_samples(port, t, schema, s)
    kin = (
        _kin_samples(port, t, schema, s, kin_cache if kin_cache is not None else {})
        if any(samples)
        else []
    )
    # the answer columns' whole domains, once per template and shared by its every group (they
    # supersede the per-group candidate samples: the judge builds one matcher per domain), with
    # the values of their kind elsewhere in the database
    domains = (
        [domain_record(x, kin[i] if i < len(kin) else ()) for i, x in enumerate(samples)]
        if any(x is not None for x in samples)
        else []
    )
    attributes = _entity_attributes(port, t, schema, s)
    entity_source, entity_domain = _entity_domain(
        port, t, schema, s, kin_cache if kin_cache is not None else {}
    )
    return _Answers(
        kinds=kinds,
        renderers=renderers,
        render_any=any(r is not None for r in renderers),
        known_types=declared if len(declared) == len(kinds) else None,
        shared_reason=shared_reason,
        domains=domains,
        attributes=attributes,
        entity_source=entity_source,
        entity_domain=entity_domain,
    )


@dataclass(slots=True)
class _Forms:
    """How a template's text forms are filled and checked: compiled once, used per fill.

    Every form of a group is in one flat list (cohort by cohort, as the record lists them): the
    filler per text template, its cohort, and the cohort part of its form id (form_id_for hashes
    f"{group_id}\\x1f{cohort}\\x1f{text}")."""

    k: int
    n_forms: int
    form_cohorts: list[str]
    form_seps: list[str]
    #: one placeholder (most templates): each form is ``value.join(pieces)``
    one_slot: bool
    pieces: list[tuple[str, ...]]
    #: several placeholders: each form is ``percent % {"0": v0, "1": v1, …}``
    percents: list[str]
    slot_keys: list[str]
    slot_name: str
    #: placeholder values as the question shows them: a date-time at midnight as its date
    slot_dates: list[bool]
    any_date_slot: bool
    #: the words of the forms that are not placeholder values: an answer that appears there is
    #: in every form of every fill (the hot loop only checks the values)
    wording: list[str]
    #: one string to test containment in with a single ``in``; a hit is confirmed on the parts
    wording_joined: str
    in_wording: dict[str, bool] = field(default_factory=dict)

    def several_slots(self, raw: Mapping[str, Any]) -> tuple[list[str], list[str], str]:
        """A several-placeholder fill's values as shown, its forms, and the values casefolded
        into one string to search."""
        shown = [v if type(v) is str else format_value(v) for v in raw.values()]
        if self.any_date_slot:
            shown = [date_text(v) if d else v for v, d in zip(shown, self.slot_dates, strict=True)]
        by_slot = dict(zip(self.slot_keys, shown, strict=True))
        return shown, [f % by_slot for f in self.percents], "\x00".join(shown).casefold()

    def repeat(self, texts: Sequence[str]) -> bool:
        """Whether a cohort has the same form twice."""
        # all forms distinct implies each cohort's are; only a repeat needs the cohort check
        k = self.k
        return len(set(texts)) != self.n_forms and any(
            len(set(texts[i : i + k])) != k for i in range(0, self.n_forms, k)
        )

    def given_away(self, values: Sequence[str], shown: Sequence[str], shown_low: str) -> str | None:
        """The answer value the fill's question gives away, if any (see :func:`_gives_away`)."""
        # containment first (cheap); _gives_away confirms a hit with its word-boundary rules
        for v in values:
            needle = v.strip().casefold()
            if not needle:
                continue
            if needle in shown_low:
                return _gives_away(values, self.wording, shown)
            if len(needle) >= 4:
                # a search of the whole wording costs more than the rest of the check;
                # answers repeat over fills (a few hundred cities), so remember it
                hit = self.in_wording.get(needle)
                if hit is None:
                    hit = needle in self.wording_joined
                    if len(self.in_wording) < _CANDIDATE_CACHE:
                        self.in_wording[needle] = hit
                if hit:
                    return _gives_away(values, self.wording, shown)
        return None

    def forms(self, gid: str, texts: Sequence[str]) -> list[dict[str, str]]:
        """The group's forms as its record lists them, each with its content-addressed id."""
        sha256 = hashlib.sha256
        return [
            {"form_id": sha256((gid + sep + x).encode()).hexdigest()[:12], "cohort": c, "text": x}
            for sep, c, x in zip(self.form_seps, self.form_cohorts, texts, strict=True)
        ]


def _forms_of(t: SqlTemplate, schema: SchemaInfo, chosen: dict[str, list[str]], k: int) -> _Forms:
    """The text forms' fillers and wording of a template, compiled once."""
    slot_dates = [_is_date_slot(schema, sl) for sl in t.slots]
    compiled = [(c, [compile_text(tt, t) for tt in texts]) for c, texts in chosen.items()]
    flat = [(c, tt) for c, texts in chosen.items() for tt in texts]
    one_slot = len(t.slots) == 1
    wording = [
        p.casefold() for _, parts in compiled for pt in parts for p in pt if isinstance(p, str)
    ]
    return _Forms(
        k=k,
        n_forms=len(flat),
        form_cohorts=[c for c, _ in flat],
        form_seps=[f"\x1f{c}\x1f" for c, _ in flat],
        one_slot=one_slot,
        pieces=[compile_pieces(tt, t) for _, tt in flat] if one_slot else [],
        percents=[] if one_slot else [compile_percent(tt, t) for _, tt in flat],
        slot_keys=[str(i) for i in range(len(t.slots))],
        slot_name=t.slots[0].param if t.slots else "",
        slot_dates=slot_dates,
        any_date_slot=any(slot_dates),
        wording=wording,
        wording_joined="\x00".join(wording),
    )


def _one_slot_value(
    raw: dict[str, Any], slot_name: str, any_date_slot: bool
) -> tuple[str, dict[str, Any]]:
    """A one-placeholder fill's value as the question shows it, and its JSON params (the fill's
    own dict, fresh per fill, when its value is JSON as it is)."""
    (value,) = raw.values()
    kind = type(value)
    params = raw if kind in _JSON_NATIVE else {slot_name: json_param(value)}
    if kind is not str:
        value = format_value(value)
    if any_date_slot:
        value = date_text(value)
    return value, params


def _json_params(raw: dict[str, Any]) -> dict[str, Any]:
    """A several-placeholder fill's JSON params: its own dict when every value is JSON as it is."""
    for v in raw.values():
        if type(v) not in _JSON_NATIVE:
            return {p: json_param(v) for p, v in raw.items()}
    return raw


def _single_answer(
    answer: tuple[Any, ...], a: _Answers
) -> tuple[list[str], Sequence[AnswerType]] | None:
    """A fill's one answer as its values and types; None when a value is null."""
    if None in answer:
        return None
    if len(answer) == 1:
        first = answer[0]
        values = [first if type(first) is str else format_value(first)]
    else:
        values = [v if type(v) is str else format_value(v) for v in answer]
    if a.render_any:
        values = [
            r(x) if r is not None else v
            for r, x, v in zip(a.renderers, answer, values, strict=True)
        ]
    return values, a.known_types if a.known_types is not None else typed_answer(answer, a.kinds)[1]


def _list_answer(
    fill: Fill, a: _Answers, as_lists: bool, s: StageSummary, sql: str, params: dict[str, Any]
) -> tuple[list[str], Sequence[AnswerType]] | None:
    """A fill with several answers as a list answer (every element required); None, the fill
    dropped and counted, when the template keeps no list answers or an element is null."""
    if not (as_lists and fill.answers and fill.n_answers <= MAX_LIST_ANSWERS):
        s.drop(
            a.shared_reason or Rejection.MULTIPLE_ANSWERS,
            {"sql": sql, "params": params, "answers": fill.n_answers},
        )
        return None
    if any(v is None for x in fill.answers for v in x):
        s.drop("null_answer", {"sql": sql, "params": params})
        return None
    r0 = a.renderers[0] or format_value
    values = [r0(x[0]) for x in fill.answers]
    return values, [a.kinds[0] or kind_of_value(fill.answers[0][0])] * len(values)


def _fill_records(
    fills: Iterator[Fill],
    t: SqlTemplate,
    cohorts: list[str],
    dataset_id: str,
    s: StageSummary,
    a: _Answers,
    forms: _Forms,
    *,
    as_lists: bool,
) -> Generator[GroupRecord, None, tuple[int, int]]:
    """The loop per fill: its record, or the reason it is dropped counted in ``s``. Returns
    how many fills it saw and how many groups it made."""
    group_id = group_id_hasher(t.sql)
    sql = t.sql
    template_id = t.template_id
    slot_params = t.params
    one_slot, slot_name, any_date_slot = forms.one_slot, forms.slot_name, forms.any_date_slot
    pieces = forms.pieces
    seen = produced = 0
    try:
        for fill in fills:
            seen += 1
            raw = fill.params
            if one_slot:  # most templates: no loop, no comprehension
                value, params = _one_slot_value(raw, slot_name, any_date_slot)
            else:
                params = _json_params(raw)
            if fill.n_answers > 1:
                answered = _list_answer(fill, a, as_lists, s, sql, params)
                if answered is None:
                    continue
            else:
                answered = _single_answer(fill.answer, a)
                if answered is None:
                    s.drop("null_answer", {"sql": sql, "params": params})
                    continue
            values, types = answered
            if one_slot:
                shown = [value]
                texts = [value.join(p) for p in pieces]
                shown_low = value.casefold()
            else:
                shown, texts, shown_low = forms.several_slots(raw)
            if forms.repeat(texts):
                s.drop("duplicate_forms", {"sql": sql, "params": params})
                continue
            given = forms.given_away(values, shown, shown_low)
            if given is not None:
                s.drop(
                    "answer_in_question",
                    {"sql": sql, "params": params, "answer": given, "text": texts[0]},
                )
                continue
            answer_domain: Any = a.domains
            if fill.n_answers > 1:
                s.list_answers += 1
                # a list answer's elements all come from the one column: its domain each
                answer_domain = a.domains * len(values)
            row = _NO_ROW_VALUES
            if a.attributes is not None:
                key = tuple(format_value(raw[p]) for p in slot_params)
                row = a.attributes.get(key, _NO_ROW_VALUES)
            s.queries += 1
            s.groups += 1
            produced += 1
            gid = group_id(params)
            yield _record(
                gid=gid,
                dataset_id=dataset_id,
                sql=sql,
                template_id=template_id,
                params=params,
                values=values,
                types=types,
                domain=answer_domain,
                row=row,
                a=a,
                forms=forms.forms(gid, texts),
            )
    finally:  # per cohort once per template, also when the consumer stops early
        for c in cohorts:
            if produced:
                s.text_queries[c] = s.text_queries.get(c, 0) + produced * forms.k
    return seen, produced


def _record(
    *,
    gid: str,
    dataset_id: str,
    sql: str,
    template_id: str,
    params: dict[str, Any],
    values: list[str],
    types: Sequence[AnswerType],
    domain: Any,
    row: RowValues,
    a: _Answers,
    forms: list[dict[str, str]],
) -> GroupRecord:
    """One group as its JSON-ready record (the model's fields)."""
    row_values, row_types, row_sources = row
    return {
        "group_id": gid,
        "dataset_id": dataset_id,
        "sql": sql,
        "params": params,
        "answer": {
            "values": values,
            "types": types,
            "answerable": True,
            "version": 1,
            "stale_values": [],
            "options": None,
            "candidates": (),
            "domain": domain,
            "attributes": row_values,
            "attribute_types": row_types,
            "attribute_sources": row_sources,
            "entity_domain": a.entity_domain,
            "entity_source": a.entity_source,
            "alternatives": (),
        },
        "forms": forms,
        "relevant_doc_ids": [],
        "scenario": "factual",
        "template_id": template_id,
        "provenance": {},
    }


def _is_date_slot(schema: SchemaInfo, slot: Slot) -> bool:
    table = schema.table(slot.table)
    col = table.column(slot.column) if table is not None else None
    return col is not None and col.kind is AnswerType.DATE


def _candidate_samples(
    port: QueryPort, t: SqlTemplate, schema: SchemaInfo, s: StageSummary
) -> list[ColumnSample | None]:
    """Per answer column, its distinct values: all of them up to :data:`MAX_DOMAIN`, a bottom-k
    sample beyond (one streamed query each)."""
    out: list[ColumnSample | None] = []
    for sql in candidate_queries(t, schema):
        if sql is None:
            out.append(None)
            continue
        s.sql_statements += 1
        out.append(ColumnSample.of((r[0] for r in port.rows(sql)), k=MAX_DOMAIN))
    return out


#: Kin columns' samples by their query, for one generation run: every template asking a city
#: reads the database's other cities once (bounded: beyond, a sample is read again).
KinCache = dict[str, ColumnSample]
_KIN_CACHE_MAX = 256


def _kin_samples(
    port: QueryPort, t: SqlTemplate, schema: SchemaInfo, s: StageSummary, cache: KinCache
) -> list[list[tuple[str, ColumnSample]]]:
    """Per answer column, its kin columns' distinct values (see :func:`kin_queries`)."""
    out: list[list[tuple[str, ColumnSample]]] = []
    for queries in kin_queries(t, schema):
        got: list[tuple[str, ColumnSample]] = []
        for source, sql in queries:
            sample = cache.get(sql)
            if sample is None:
                s.sql_statements += 1
                sample = ColumnSample.of((r[0] for r in port.rows(sql)), k=MAX_DOMAIN)
                if len(cache) < _KIN_CACHE_MAX:
                    cache[sql] = sample
            got.append((source, sample))
        out.append(got)
    return out


def _entity_domain(
    port: QueryPort, t: SqlTemplate, schema: SchemaInfo, s: StageSummary, cache: KinCache
) -> tuple[str, dict[str, Any] | None]:
    """The source and domain record of the column the template names its entity by ("", None
    without one), read once per run for every template that names entities by it."""
    query = entity_query(t, schema)
    if query is None:
        return "", None
    source, sql = query
    sample = cache.get(sql)
    if sample is None:
        s.sql_statements += 1
        sample = ColumnSample.of((r[0] for r in port.rows(sql)), k=MAX_DOMAIN)
        if len(cache) < _KIN_CACHE_MAX:
            cache[sql] = sample
    return source, domain_record(sample)


#: What a fill whose row the map does not hold (or holds twice) gets: no values.
_NO_ROW_VALUES: RowValues = ((), (), ())


def _entity_attributes(
    port: QueryPort, t: SqlTemplate, schema: SchemaInfo, s: StageSummary
) -> dict[tuple[str, ...], RowValues] | None:
    """The other values (and their types) of the rows the template's slots name, by their slot
    values (one streamed query per template, and one per table whose rows reference the named
    one), or None for a template whose slots name no row."""
    refs = referencing_queries(t, schema)
    query = entity_attributes_query(t, schema, keys_only=bool(refs))
    if query is None:
        return None
    s.sql_statements += 1
    rows = entity_attributes(port.rows(query.sql), query.n_keys, query.types, sources=query.sources)
    if rows:
        # the rows that reference the named one (its trains), a bounded few per entity
        for ref in refs:
            s.sql_statements += 1
            referencing_attributes(rows, port.rows(ref.sql), ref)
    return rows


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
    list_answers: bool = False,
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
            list_answers=list_answers,
        )
    )
    used = {g.template_id for g in groups}
    kept = [t for t in templates if t.template_id in used]
    texts = {
        t.template_id: {c: list(v) for c, v in text_templates[t.template_id].items()} for t in kept
    }
    return GenerationResult(groups, kept, texts, summary)
