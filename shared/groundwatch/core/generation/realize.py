"""The offline text-template generator g_t: a deterministic realizer.

From a SQL template's parts (what is selected, what the conditions name, the join role) it builds
one text template per verbalizer pattern. Text templates keep the paper's placeholders
(``'[Client.Name]'``) so they can be exported in the GRAMMAR tool's format and filled per fill.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from groundwatch.core.generation.answers import format_value
from groundwatch.core.generation.lexicon import Thesaurus
from groundwatch.core.generation.naming import (
    attribute_label,
    entity_noun,
    humanize,
    participle,
    plural,
)
from groundwatch.core.generation.rules import named
from groundwatch.core.generation.schema import SchemaInfo, TableInfo
from groundwatch.core.generation.templates import SqlTemplate, tokens_in
from groundwatch.core.generation.verbalizers import Verbalizer
from groundwatch.core.model import AnswerType

_SPACES = re.compile(r"\s+")


def word_count(text: str) -> int:
    """Words as a reader counts them; a placeholder counts as one word."""
    return len(re.sub(r"'?\[[^\]]+\]'?", "X", text).split())


def _subject(template: SqlTemplate, schema: SchemaInfo | None) -> TableInfo | None:
    """The table whose rows the question is about: the one its entity noun names, else the
    named row's table."""
    if schema is None:
        return None
    for t in schema.tables:
        if template.entity and entity_noun(t.name) == template.entity:
            return t
    name = template.selected[0].table if template.selected else template.slots[0].table
    if template.kind != "single" and template.slots:
        name = template.slots[0].table
    return schema.table(name)


def _listing(items: Sequence[str]) -> str:
    items = list(dict.fromkeys(i for i in items if i))
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def vocabulary(template: SqlTemplate, schema: SchemaInfo | None = None) -> dict[str, str]:
    """Words of the schema around one template, for long forms: what else its rows record, what
    they are linked to, what kind of value is asked. Only names from the schema (table, column,
    related-table names) and the answer's type go in, so a music schema's questions talk about
    albums and tracks, never about "the management team"."""
    asked = {(s.table, s.column) for s in template.selected} | {
        (s.table, s.column) for s in template.slots
    }
    subject = _subject(template, schema)
    entity = template.entity or (entity_noun(subject.name) if subject else "record")
    attrs: list[str] = []
    related: list[str] = []
    if subject is not None and schema is not None:
        selected = {(s.table, s.column) for s in template.selected}
        attrs = [
            attribute_label(c.name, c.kind)
            for c in subject.descriptive()
            if (subject.name, c.name) not in asked
        ][:3] or [
            # nothing else recorded: the columns the question names it by (never the answer)
            attribute_label(c.name, c.kind)
            for c in subject.descriptive()
            if (subject.name, c.name) not in selected
        ][:3]
        for fk in subject.foreign_keys:
            other = schema.table(fk.ref_table)
            if other is not None and other.name != subject.name:
                related.append(plural(entity_noun(other.name)))
        for t in schema.tables:
            if t.name != subject.name and any(
                fk.ref_table.lower() == subject.name.lower() for fk in t.foreign_keys
            ):
                related.append(plural(entity_noun(t.name)))
    else:
        related = [plural(entity_noun(t)) for t in template.tables[1:]]
    related = [r for r in dict.fromkeys(related) if r != plural(entity)][:3]
    kinds = {s.kind for s in template.selected}
    kind_noun = (
        "answer"
        if any(s.flag for s in template.selected)
        else "date"
        if kinds == {AnswerType.DATE}
        else "number"
        if kinds == {AnswerType.NUMBER}
        else "value"
    )
    return {
        "entities": plural(entity),
        "attrs": _listing(attrs) or "other details",
        "related": _listing(related) or "other records",
        "related_clause": f", which are linked to the {_listing(related)}," if related else "",
        "kind_noun": kind_noun,
    }


def template_parts(
    template: SqlTemplate,
    vocab: Mapping[str, str] | None = None,
    shared_names: frozenset[tuple[str, str]] = frozenset(),
) -> dict[str, str]:
    """The pattern fields for one SQL template (see :mod:`verbalizers`); ``shared_names``:
    the naming columns whose values other tables' rows share (:attr:`SchemaInfo.shared_names`)."""
    slots = template.slots
    quoted = [f"'{s.grammar_token()}'" for s in slots]
    entity = template.entity or "record"
    if template.refs is not None:
        ref, the_ref = template.refs
    elif len(slots) == 1 and slots[0].param in template.identifier_slots:
        # the entity type with a name other rows share: "address for 'Mitchell'" could be an
        # employee's or a customer's
        shared = (slots[0].table, slots[0].column) in shared_names
        ref = f"{entity} {quoted[0]}" if shared else quoted[0]
        the_ref = named(entity, slots[0].column, quoted[0])
    elif len({s.table for s in slots}) > 1:
        nouns = [entity_noun(s.table) for s in slots]
        ref = " and ".join(f"{n} {q}" for n, q in zip(nouns, quoted, strict=True))
        the_ref = " and ".join(
            named(n, s.column, q)
            if s.param in template.identifier_slots
            else f"the {n} with {humanize(s.column)} {q}"
            for n, s, q in zip(nouns, slots, quoted, strict=True)
        )
    else:
        conds = [f"{humanize(s.column)} {q}" for s, q in zip(slots, quoted, strict=True)]
        ref = f"{entity} with " + " and ".join(conds)
        the_ref = f"the {entity} whose " + " and whose ".join(
            f"{humanize(s.column)} is {q}" for s, q in zip(slots, quoted, strict=True)
        )
    parts = {
        "answer": template.answer_label or "value",
        "entity": entity,
        "ref": ref,
        "the_ref": the_ref,
    }
    parts.update(vocab if vocab is not None else vocabulary(template))
    parts["state"] = flag_state(template)
    return parts


def flag_state(template: SqlTemplate) -> str:
    """What a yes/no column says of a row (``Discontinued`` → discontinued, ``is_active`` →
    active, ``HasWarranty`` → has warranty), or "" for a template that asks no flag."""
    sel = template.selected[0] if len(template.selected) == 1 else None
    if sel is None or not sel.flag or sel.agg not in ("", "max", "min"):
        return ""
    ws = humanize(sel.column).split()
    if len(ws) > 1 and ws[0].lower() in ("is", "flag"):
        ws = ws[1:]
    return " ".join(ws).lower()


_MONEY_COST = frozenset({"price", "cost"})
_MONEY_TOTAL = frozenset({"total", "amount", "sum"})
_MONEY_PAY = frozenset({"salary", "wage", "pay", "income", "earnings"})
_WHERE = frozenset({"address", "location", "headquarters", "venue", "place", "whereabouts"})
_PLACES = frozenset({"city", "country", "region", "state", "province", "town", "county"})


def wh_question(
    template: SqlTemplate, parts: Mapping[str, str], thesaurus: Thesaurus | None = None
) -> tuple[str, str]:
    """The question as a person asks it, by answer type: direct and embedded, no end mark.

    who (a person's name), when (an event's date: "when was employee 'X' hired"), where (an
    address), how many (counts), how much (money: "how much does track 'X' cost"), which
    (anything else); a yes/no column as "is … discontinued". A generator's own wording
    (:attr:`SqlTemplate.wh`) wins.
    """
    if template.wh is not None:
        return template.wh
    label, the_ref = parts["answer"], parts["the_ref"]
    ws = label.split()
    sel = template.selected[0] if template.selected else None
    state = parts.get("state", "")
    if state:
        if state.startswith("has "):
            return (f"does {the_ref} have {state[4:]}", f"whether {the_ref} has {state[4:]}")
        return (f"is {the_ref} {state}", f"whether {the_ref} is {state}")
    if label.startswith("number of "):
        what = label.removeprefix("number of ")
        return (f"how many {what} does {the_ref} have", f"how many {what} {the_ref} has")
    kind = sel.kind if sel is not None else None
    if kind is AnswerType.DATE and len(ws) >= 2 and ws[-1] == "date" and sel and not sel.agg:
        event = " ".join(ws[:-1])
        pp = _event_participle(event, template.entity, thesaurus)
        if pp:
            return (f"when was {the_ref} {pp}", f"when {the_ref} was {pp}")
    last = set(ws[-1:])
    if kind is AnswerType.NUMBER and sel is not None and sel.agg in ("", "max", "min"):
        if last & _MONEY_COST:
            return (f"how much does {the_ref} cost", f"how much {the_ref} costs")
        if last & _MONEY_TOTAL and sel.agg == "":
            return (f"how much does {the_ref} come to", f"how much {the_ref} comes to")
        if last & _MONEY_PAY:
            return (f"how much does {the_ref} earn", f"how much {the_ref} earns")
    if last & _WHERE:
        return (f"where is {the_ref} located", f"where {the_ref} is located")
    if last & _PLACES:
        return (f"in which {label} is {the_ref}", f"in which {label} {the_ref} is")
    if (
        kind is AnswerType.TEXT
        and template.kind in ("join", "chain", "link")
        and thesaurus is not None
        and thesaurus.is_person(label.split(" of ")[0])
    ):
        return (f"who is the {label} of {the_ref}", f"who the {label} of {the_ref} is")
    if kind is AnswerType.NUMBER and ws and ws[-1].endswith("s") and not ws[-1].endswith("ss"):
        return (f"how many {label} does {the_ref} have", f"how many {label} {the_ref} has")
    return (f"what is the {label} of {the_ref}", f"what the {label} of {the_ref} is")


def _event_participle(event: str, entity: str, thesaurus: Thesaurus | None) -> str | None:
    """ "hire" → hired, "birth" → born, "shipped" → shipped; None for a date named after the row
    itself ("invoice date" of an invoice: "when was the invoice invoiced") or not an event."""
    ws = event.split()
    if len(ws) != 1 or (entity and ws[0] == entity.split()[-1]):
        return None
    w = ws[0]
    if w == "birth":
        return "born"
    if w.endswith("ed") and len(w) > 4:
        return w
    if thesaurus is not None and thesaurus.is_verb(w):
        return participle(w)
    return None


def _tidy(text: str) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text[:1].upper() + text[1:] if text[:1].islower() and not text.startswith("'") else text


def realize(
    template: SqlTemplate,
    verbalizer: Verbalizer,
    vocab: Mapping[str, str] | None = None,
    thesaurus: Thesaurus | None = None,
    shared_names: frozenset[tuple[str, str]] = frozenset(),
) -> list[str]:
    """Distinct text templates for one SQL template in one cohort, in pattern order.

    With a ``thesaurus`` the patterns take turns naming the attribute by the column's words and
    by the alternatives a person uses ("surname" for ``LastName``), so every cohort asks both
    ways. A yes/no column is asked with the verbalizer's ``yes_no`` patterns. Long forms are
    padded with sentences about the schema (the verbalizer's padding patterns, each pattern
    starting at another one, so the forms of a group do not end alike) until they reach
    ``min_words``; every text template carries exactly the SQL template's placeholders (a
    pattern that would drop one is skipped).
    """
    base = template_parts(template, vocab, shared_names)
    labels = [base["answer"]]
    if thesaurus is not None and not base["state"]:
        labels += list(thesaurus.alternatives(base["answer"]))[:2]
    variants = []
    for label in labels:
        parts = dict(base, answer=label)
        parts["wh"], parts["wh_embedded"] = wh_question(template, parts, thesaurus)
        variants.append(parts)
    patterns = verbalizer.patterns
    if base["state"]:
        patterns = verbalizer.yes_no or tuple(p for p in patterns if "{wh" in p) or patterns
    want = {s.grammar_token() for s in template.slots}
    out: list[str] = []
    pads = verbalizer.padding
    for i, pattern in enumerate(patterns):
        parts = variants[(i + 1) % len(variants)]
        text = _tidy(pattern.format(**parts))
        j = 0
        while word_count(text) < verbalizer.min_words and j < len(pads):
            pad = pads[(i + j) % len(pads)]
            j += 1
            text = f"{text} {_tidy(pad.format(**parts))}"
        if word_count(text) < verbalizer.min_words or tokens_in(text) != want:
            continue
        if text not in out:
            out.append(text)
    return out


def compile_text(text_template: str, template: SqlTemplate) -> tuple[str | int, ...]:
    """A text template split into literal parts and slot indexes, so filling is one join.

    Filling a million groups × 2k forms is the hot loop of generation; searching for the tokens
    once per text template instead of once per fill is what keeps it cheap.
    """
    parts: list[str | int] = [text_template]
    for i, s in enumerate(template.slots):
        token = s.grammar_token()
        nxt: list[str | int] = []
        for part in parts:
            if isinstance(part, int):
                nxt.append(part)
                continue
            pieces = part.split(token)
            for j, piece in enumerate(pieces):
                if j:
                    nxt.append(i)
                nxt.append(piece)
        parts = nxt
    return tuple(p for p in parts if p != "")


def fill_compiled(parts: tuple[str | int, ...], values: Sequence[str]) -> str:
    return "".join(values[p] if isinstance(p, int) else p for p in parts)


def compile_pieces(text_template: str, template: SqlTemplate) -> tuple[str, ...]:
    """A one-placeholder template's text template as the literal pieces around the placeholder,
    so filling it is ``value.join(pieces)``: one C call with no format string to parse.

    Filling is the hot loop of generation (a million groups × 2k forms); ``str.format`` re-parses
    its format string on every call, which cost several times the join.
    """
    if len(template.slots) != 1:
        raise ValueError("compile_pieces: a template with exactly one placeholder")
    return tuple(text_template.split(template.slots[0].grammar_token()))


def compile_percent(text_template: str, template: SqlTemplate) -> str:
    """A text template as a ``%``-format string with a named field per slot index
    (``%(0)s``) and literal ``%`` doubled: ``fmt % {"0": v0, "1": v1}`` fills every placeholder
    in one C call, a value's own ``%`` or braces never re-read. The same split as
    :func:`compile_text`, so it fills like :func:`fill_compiled`.
    """
    return "".join(
        f"%({p})s" if isinstance(p, int) else p.replace("%", "%%")
        for p in compile_text(text_template, template)
    )


def fill_text(text_template: str, template: SqlTemplate, params: Mapping[str, Any]) -> str:
    """Substitute a fill's values for the placeholders (Algorithm 1, line 15)."""
    out = text_template
    for s in template.slots:
        out = out.replace(s.grammar_token(), format_value(params[s.param]))
    return out
