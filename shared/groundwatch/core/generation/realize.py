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
    is_count_label,
    is_plural_noun,
    participle,
    plural,
    singular,
)
from groundwatch.core.generation.rules import named
from groundwatch.core.generation.schema import SchemaInfo, TableInfo
from groundwatch.core.generation.templates import Selected, SqlTemplate, tokens_in
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
    if (
        subject is not None
        and schema is not None
        and all(entity_noun(t.name) != entity for t in schema.tables)
    ):
        # the entity is a role its rows play (a trip's destination, a vessel's home port): the
        # rows one compares or lists are the table's ("a few of the stations"), never the role's
        # ("a few of the destinations", which are no kind of thing)
        entity = entity_noun(subject.name)
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
    # never the tables the answer comes from: "linked to the categories" gives the category away
    answered = {plural(entity_noun(s.table)) for s in template.selected}
    related = [r for r in dict.fromkeys(related) if r != plural(entity) and r not in answered][:3]
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


#: What a row is called by, asked of the row itself.
_OWN_NAMES = frozenset({"name", "code", "title", "label"})  # a "number" of a row reads as a count


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
        # employee's or a customer's; and the role of the named row in a reverse join: "client
        # of account manager 'X'", never "client linked to 'X'" (an employee is an account
        # manager of some clients, a project manager of other rows: the bare name does not say
        # which)
        shared = (slots[0].table, slots[0].column) in shared_names
        reverse = template.join is not None and template.join.direction == "reverse"
        ref = f"{entity} {quoted[0]}" if shared or reverse else quoted[0]
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
            f"{humanize(s.column)} {'are' if is_plural_label(humanize(s.column)) else 'is'} {q}"
            for s, q in zip(slots, quoted, strict=True)
        )
    answer = template.answer_label or "value"
    own = answer.removeprefix(f"{entity} ")
    if own != answer and own in _OWN_NAMES and the_ref.startswith(f"the {entity} "):
        # a row's own name or code, asked of the row: "the name of the medication with code
        # 'ATV20'", never "the medication name of the medication …"
        answer = own
    parts = {
        "answer": answer,
        "entity": entity,
        "ref": ref,
        "the_ref": the_ref,
    }
    parts.update(vocab if vocab is not None else vocabulary(template))
    parts["state"] = flag_state(template)
    parts.setdefault("its", "its")
    parts.update(agreement(parts["answer"], template))
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
    if len(ws) > 1 and ws[-1].lower() in ("flag", "indicator", "ind", "yn"):
        ws = ws[:-1]  # active_flg: "is the supplier active", not "active flag"
    return " ".join(ws).lower()


_MONEY_COST = frozenset({"price", "cost"})
_MONEY_TOTAL = frozenset({"total", "amount", "sum"})
_MONEY_PAY = frozenset({"salary", "wage", "pay", "income", "earnings"})
_WHERE = frozenset(
    {"address", "location", "headquarters", "venue", "place", "whereabouts", "building", "office"}
)
_PLACES = frozenset({"city", "country", "region", "state", "province", "town", "county", "room"})
#: A column that sorts rows into kinds: "what kind of product is 'X'" asks for its category.
_KINDS = frozenset({"category", "type", "kind", "class", "sort"})


def wh_question(
    template: SqlTemplate, parts: Mapping[str, str], thesaurus: Thesaurus | None = None
) -> tuple[str, str]:
    """The question as a person asks it, by answer type: direct and embedded, no end mark.

    who (a person's name), when (an event's date: "when was employee 'X' hired"), where (an
    address), how many (counts), how much (money: "how much does track 'X' cost"), what kind (a
    category or type: "what kind of product is 'X'"), which (a row singled out by two
    conditions: "which employee has title 'X' and city 'Y'", or anything else); a yes/no column
    as "is … discontinued". A generator's own wording
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
    if template.kind == "pair" and template.entity:
        # two conditions single out a row and its name is asked: the row itself is the answer
        conds = " and ".join(f"{humanize(s.column)} '{s.grammar_token()}'" for s in template.slots)
        which = f"which {template.entity} has {conds}"
        return (which, which)
    if label.startswith("number of "):
        what = label.removeprefix("number of ")
        return (f"how many {what} does {the_ref} have", f"how many {what} {the_ref} has")
    return (
        _event_question(template, ws, sel, the_ref, thesaurus)
        or _amount_question(ws, sel, the_ref)
        or _kind_or_place_question(template, parts, ws, sel)
        or _row_question(template, label, ws, sel, the_ref, thesaurus)
    )


def _event_question(
    template: SqlTemplate,
    ws: list[str],
    sel: Selected | None,
    the_ref: str,
    thesaurus: Thesaurus | None,
) -> tuple[str, str] | None:
    """When (an event's date column) or in which year (its year column) something happened."""
    if sel is None or sel.agg:
        return None
    if sel.kind is AnswerType.DATE and len(ws) >= 2 and ws[-1] == "date":
        pp = _event_participle(" ".join(ws[:-1]), template.entity, thesaurus)
        if pp in _INTRANSITIVE:
            # a member joins, an employee retires: no passive ("when was 'Alice' joined")
            return (f"when did {the_ref} {_INTRANSITIVE[pp]}", f"when {the_ref} {pp}")
        if pp:
            return (f"when was {the_ref} {pp}", f"when {the_ref} was {pp}")
    if sel.kind is AnswerType.NUMBER and len(ws) == 2 and ws[-1] == "year":
        # "founded year", "birth year": the year of an event, asked "in which year was X founded"
        pp = _event_participle(ws[0], template.entity, thesaurus)
        if pp in _INTRANSITIVE:
            return (
                f"in which year did {the_ref} {_INTRANSITIVE[pp]}",
                f"in which year {the_ref} {pp}",
            )
        if pp:
            return (f"in which year was {the_ref} {pp}", f"in which year {the_ref} was {pp}")
    return None


def _amount_question(ws: list[str], sel: Selected | None, the_ref: str) -> tuple[str, str] | None:
    """How much something costs, comes to or earns (a money column, or its max or min)."""
    if sel is None or sel.kind is not AnswerType.NUMBER or sel.agg not in ("", "max", "min"):
        return None
    last = set(ws[-1:])
    if last & _MONEY_COST:
        return (f"how much does {the_ref} cost", f"how much {the_ref} costs")
    if last & _MONEY_TOTAL and sel.agg == "":
        return (f"how much does {the_ref} come to", f"how much {the_ref} comes to")
    if last & _MONEY_PAY:
        return (f"how much does {the_ref} earn", f"how much {the_ref} earns")
    return None


def _kind_or_place_question(
    template: SqlTemplate, parts: Mapping[str, str], ws: list[str], sel: Selected | None
) -> tuple[str, str] | None:
    """What kind of thing it is (a category column), where it is (an address), in which city."""
    label, the_ref = parts["answer"], parts["the_ref"]
    last = set(ws[-1:])
    kind = sel.kind if sel is not None else None
    if kind is AnswerType.TEXT and len(ws) == 1 and last & _KINDS and template.entity:
        # "what kind of product is 'X'": the noun is said once, not "… the product named 'X'"
        noun = template.entity
        ref = parts["ref"].removeprefix(f"{noun} ")
        return (f"what kind of {noun} is {ref}", f"what kind of {noun} {ref} is")
    if last & _WHERE:
        return (f"where is {the_ref} located", f"where {the_ref} is located")
    if last & _PLACES and len(ws) == 1:
        # where the row itself is ("in which city is the branch"); a place qualified by what it
        # is to the row (home city, birth country, billing city) is a fact about it, asked "what
        # is the home city of …": the row is not in it
        return (f"in which {label} is {the_ref}", f"in which {label} {the_ref} is")
    return None


def _row_question(
    template: SqlTemplate,
    label: str,
    ws: list[str],
    sel: Selected | None,
    the_ref: str,
    thesaurus: Thesaurus | None,
) -> tuple[str, str]:
    """Which row of another table, who (a person), how many (a plural count), else what is."""
    kind = sel.kind if sel is not None else None
    reverse = template.join is not None and template.join.direction == "reverse"
    if reverse and sel is not None and not sel.agg:
        # a row of another table that points at the named one: "which project does the client
        # named X have", never "what is the project of …" (a row is no value) nor "who is the
        # student of …" (it presumes the one)
        return (f"which {label} does {the_ref} have", f"which {label} {the_ref} has")
    if (
        kind is AnswerType.TEXT
        and template.kind in ("join", "chain", "link", "single")
        and thesaurus is not None
        and thesaurus.is_person(label.split(" of ")[0])
    ):
        return (f"who is the {label} of {the_ref}", f"who the {label} of {the_ref} is")
    if kind is AnswerType.NUMBER and ws and ws[-1].endswith("s") and not ws[-1].endswith("ss"):
        return (f"how many {label} does {the_ref} have", f"how many {label} {the_ref} has")
    be = agreement(label, template)["be"]
    return (f"what {be} the {label} of {the_ref}", f"what the {label} of {the_ref} {be}")


def agreement(label: str, template: SqlTemplate) -> dict[str, str]:
    """The verb forms a pattern says the asked attribute with: ``{be}`` ("is"; "are" for a text
    attribute named by a plural noun, "interests"), ``{be_short}`` ("'s"; " are"), so "what are
    the interests of …", never "what is the interests of …". A number is one value whatever
    its name ("the duration minutes … is"), a count too ("number of platforms")."""
    kinds = {s.kind for s in template.selected}
    many = kinds == {AnswerType.TEXT} and len(template.selected) == 1 and is_plural_label(label)
    return {"be": "are", "be_short": " are"} if many else {"be": "is", "be_short": "'s"}


def is_plural_label(label: str) -> bool:
    """A label whose head is a plural noun ("interests", "spoken languages"), not a count nor a
    phrase whose head is before "of" ("name of the members")."""
    ws = label.split()
    return bool(ws) and not is_count_label(label) and " of " not in label and is_plural_noun(ws[-1])


#: Events a date column may be named after whose verb takes no object, by past form: asked
#: "when did X join", never in the passive.
_INTRANSITIVE = {
    "joined": "join", "arrived": "arrive", "died": "die", "retired": "retire",
    "graduated": "graduate", "started": "start", "ended": "end", "departed": "depart",
    "resigned": "resign", "expired": "expire", "returned": "return", "landed": "land",
    "occurred": "occur", "happened": "happen", "emigrated": "emigrate", "moved": "move",
}  # fmt: skip


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


def _with_questions(
    template: SqlTemplate, parts: dict[str, str], thesaurus: Thesaurus | None
) -> dict[str, str]:
    """``parts`` with the question by answer type: ``wh``, ``wh_embedded`` and ``wh_short``, the
    latter with the terse reference ("when was 'Adams' hired"). A terse reference that is a
    relation ("customer 'X' invoice", "shipper 'X' and employee 'Y'") is no subject for a
    question by type ("when was shipper 'X' and employee 'Y' shipped"): the short question then
    asks for the attribute by its label, unless the generator worded one of its own."""
    parts.update(agreement(parts["answer"], template))
    parts["wh"], parts["wh_embedded"] = wh_question(template, parts, thesaurus)
    if template.wh is not None or template.kind == "pair" or _ONE_ENTITY.fullmatch(parts["ref"]):
        terse = dict(parts, the_ref=parts["ref"])
        parts["wh_short"] = wh_question(template, terse, thesaurus)[0]
    else:
        parts["wh_short"] = f"what {parts['be']} the {parts['answer']} of {parts['ref']}"
    return parts


#: A terse reference to one row: its name, after its type ("employee 'Adams'", "'Adams'").
_ONE_ENTITY = re.compile(r"(?:[a-z][a-z ]* )?'[^']*'")
_COUNT_FIELDS = frozenset({"answer", "wh", "wh_embedded", "wh_short"})
_COUNT_LABEL = re.compile(
    r"^number of (?:different )?([a-z]+(?: [a-z]+)?)(?: (?:on|in|of|with) .*)?$"
)


def counted_alternatives(
    label: str, thesaurus: Thesaurus, people: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """For a count ("number of territories", "number of different orders on the …"), the
    counted noun in the plural and each of its alternatives in the plural ("territories" →
    "districts"), by the thesaurus's rules for the noun alone; rows of a table of people
    (``people``: see :func:`people_nouns`) are also counted as people ("how many different
    people are on the orders of customer 'X'")."""
    m = _COUNT_LABEL.match(label)
    if m is None:
        return []
    said = m.group(1)
    noun = singular(said)
    if plural(noun) != said:
        return []
    out = [(said, plural(alt)) for alt in thesaurus.alternatives(noun)]
    if said in people:
        out.append((said, "people"))
    return out


#: Words of a column that holds part of a person's name: a table with one holds people.
_PERSON_NAME = (("first", "name"), ("last", "name"), ("surname",), ("forename",), ("given", "name"))


def people_nouns(schema: SchemaInfo | None) -> frozenset[str]:
    """The plural nouns of the tables whose rows are people, told by a column for a first or
    last name (an ``Employees`` table with ``LastName``; not a ``Customers`` table of companies
    with a ``ContactName``)."""
    out: set[str] = set()
    for t in schema.tables if schema is not None else ():
        for c in t.columns:
            ws = tuple(w.lower() for w in humanize(c.name).split())
            if any(ws[-len(p) :] == p for p in _PERSON_NAME):
                out.add(plural(entity_noun(t.name)))
                break
    return frozenset(out)


def _reword(text: str, said: str, alt: str) -> str:
    return re.sub(rf"\b{re.escape(said)}\b", alt, text)


def _tidy(text: str) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text[:1].upper() + text[1:] if text[:1].islower() and not text.startswith("'") else text


def realize(
    template: SqlTemplate,
    verbalizer: Verbalizer,
    vocab: Mapping[str, str] | None = None,
    thesaurus: Thesaurus | None = None,
    shared_names: frozenset[tuple[str, str]] = frozenset(),
    people: frozenset[str] = frozenset(),
) -> list[str]:
    """Distinct text templates for one SQL template in one cohort, in pattern order.

    With a ``thesaurus`` every other pattern names the attribute by an alternative a person uses
    ("surname" for ``LastName``) and the rest by the column's own words, so a cohort asks both
    ways and most of a group stays in the words a corpus is likely to use (a group whose every
    form is in other words says little when none is answered). A yes/no column is asked with
    the verbalizer's ``yes_no`` patterns. Long forms are padded with sentences about the schema
    (the verbalizer's padding patterns, each pattern starting at another one, so the forms of a
    group do not end alike) until they reach ``min_words``; every text template carries
    exactly the SQL template's placeholders (a pattern that would drop one is skipped).
    """
    base = template_parts(template, vocab, shared_names)
    base["its"] = "their" if plural(base["entity"]) in people else "its"
    first = _with_questions(template, dict(base), thesaurus)
    variants = [first]
    if thesaurus is not None and not base["state"]:
        label = base["answer"]
        for alt in list(thesaurus.alternatives(label))[:2]:
            variants.append(_with_questions(template, dict(base, answer=alt), thesaurus))
        # rows counted as "people" only where the question says how they are linked ("how
        # many people are in course 'X'"): "number of people" of an advisor says not who; and
        # only where one table holds people (with vets and owners, "people" is either)
        counters = people if template.wh is not None and len(people) == 1 else frozenset()
        for said, alt in counted_alternatives(label, thesaurus, counters)[:2]:
            # a count is named by what it counts: "number of districts" for territories, the
            # generator's own question reworded the same way
            variants.append(
                {k: _reword(v, said, alt) if k in _COUNT_FIELDS else v for k, v in first.items()}
            )
    patterns = verbalizer.patterns
    if base["state"]:
        patterns = verbalizer.yes_no or tuple(p for p in patterns if "{wh" in p) or patterns
    want = {s.grammar_token() for s in template.slots}
    out: list[str] = []
    pads = verbalizer.padding
    if (
        len(base["answer"].split()) > _LONGEST_TRAILING_ANSWER
        or len(_QUOTED_REF.findall(base["ref"])) > 1
    ):
        # "product 'X' number of different warehouses on the stock moves", "student 'X' in
        # course 'Y' grade": a long attribute, or one after two names, reads as a dump; it is
        # said before them ("grade of student 'X' in course 'Y'")
        patterns = tuple(p for p in patterns if not _ANSWER_AFTER_REF.match(p)) or patterns
    if is_count_label(base["answer"]):
        # a count is not picked from values: "which number of vessels is recorded", "what
        # number of platforms does … have" ask it in a frame for a kind of thing
        patterns = tuple(p for p in patterns if not _CHOOSES_ANSWER.search(p)) or patterns
    for i, pattern in enumerate(patterns):
        # odd positions take the alternatives in turn, even ones the column's own words
        parts = (
            variants[1 + (i // 2) % (len(variants) - 1)]
            if i % 2 and len(variants) > 1
            else (variants[0])
        )
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


#: Most words of an attribute a short form may put after the row's name ("'X' hire date").
_LONGEST_TRAILING_ANSWER = 3
_ANSWER_AFTER_REF = re.compile(r"^\{ref\}:? \{answer\}")
#: A pattern that asks the attribute as a choice among its values ("Which {answer} is …").
_CHOOSES_ANSWER = re.compile(r"\b[Ww](?:hich|hat) \{answer\}")
_QUOTED_REF = re.compile(r"'[^']*'")


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
