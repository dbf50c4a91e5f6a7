"""Human words for database names, so templates read like questions, not like schema dumps.

GRAMMAR's SQL criteria ask for "meaningful and descriptive" columns; the realizer has to say them
the way a person would (``SupervisorOrManager`` → "supervisor or manager", ``start_date`` →
"start date"), and the SQL needs parameter names that are valid bind names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")
_ACRONYMS = {
    "id", "ceo", "cfo", "cto", "hr", "it", "uk", "us", "eu", "url", "vat", "isbn", "issn", "sku",
    "upc", "ean", "gtin", "vin", "iban", "bic", "ip", "imdb", "doi", "api", "gps", "kpi", "roi",
}  # fmt: skip
#: A word said letter by letter by its shape: three to five letters and no vowel ("ssn",
#: "pdf", "crm"); a unit (:data:`_UNITS`: "mph", "kwh") and these are written small.
_SPELLED = re.compile(r"[b-df-hj-np-tv-xz]{3,5}")
_NOT_SPELLED = frozenset({"nth", "mrs", "yrs", "pts", "mpg", "kph"})


def _is_acronym(word: str) -> bool:
    if word in _ACRONYMS:
        return True
    return (
        _SPELLED.fullmatch(word) is not None
        and word not in _NOT_SPELLED
        and word not in _UNITS
        and word not in _UNIT_WORDS
    )


_IRREGULAR = {"people": "person", "staff": "staff", "data": "data", "series": "series"}
_SURROGATE_TOKENS = {"id", "uuid", "guid", "pk", "oid", "rowid"}


def words(name: str) -> list[str]:
    """Split a snake_case, CamelCase or spaced identifier into lower-case words."""
    spaced = _CAMEL.sub(" ", name)
    return [w.lower() for w in _NON_WORD.split(spaced) if w]


#: The abbreviations schema designers write and nobody says: a question names the department,
#: never the "dept" (and a reader looking for "quantity" finds no "qty"). Only forms that stand
#: for one word in a table's or column's name; words that are also English words in their own
#: right are left out unless the database sense dominates in names (``cat`` for category,
#: ``cap`` for capacity).
ABBREVIATIONS = {
    "acct": "account", "addr": "address", "amt": "amount", "avg": "average", "bal": "balance",
    "bldg": "building", "cat": "category", "cd": "code", "cnt": "count", "cntry": "country",
    "ctry": "country", "cty": "city", "cust": "customer", "dept": "department",
    "desc": "description", "descr": "description", "dob": "birth date", "dt": "date",
    "emp": "employee", "empl": "employee", "flg": "flag", "fname": "first name",
    "lname": "last name", "grp": "group", "loc": "location", "mgr": "manager",
    "mfr": "manufacturer", "msg": "message", "nbr": "number", "num": "number", "nm": "name",
    "org": "organization", "prc": "price", "prereq": "prerequisite", "prod": "product",
    "qty": "quantity", "qtr": "quarter", "rcvd": "received", "recv": "received",
    "ref": "reference", "seq": "sequence", "src": "source", "supp": "supplier",
    "tel": "telephone", "txn": "transaction", "trx": "transaction", "usr": "user",
    "whse": "warehouse", "yr": "year", "mth": "month", "cap": "capacity",
    "dest": "destination", "pymt": "payment", "pmt": "payment", "shp": "shipment",
    "sal": "salary", "ord": "order", "po": "purchase order", "proj": "project",
}  # fmt: skip


#: The abbreviations of the schema being worded (its own, found from its longer names), read
#: before the word list: set for a generation run by :func:`spoken_as`.
_SCHEMA_WORDS: ContextVar[Mapping[str, str] | None] = ContextVar(
    "schema_abbreviations", default=None
)


@contextmanager
def spoken_as(abbreviations: Mapping[str, str]) -> Iterator[None]:
    """Word names with a schema's own abbreviations (``appt`` → appointment) while inside."""
    token = _SCHEMA_WORDS.set(abbreviations)
    try:
        yield
    finally:
        _SCHEMA_WORDS.reset(token)


def spoken_words(name: str) -> list[str]:
    """:func:`words` as a person says them: abbreviations written out (``prod_nm`` → product
    name, ``unit_prc`` → unit price, ``order_no`` → order number), the schema's own first
    (:func:`spoken_as`)."""
    out: list[str] = []
    ws = words(name)
    own = _SCHEMA_WORDS.get() or {}
    for i, w in enumerate(ws):
        if w == "no" and i == len(ws) - 1 and i > 0:
            out.append("number")  # order_no, but never a lone "no"
        else:
            out.extend((own.get(w) or ABBREVIATIONS.get(w, w)).split())
    return out


def humanize(name: str) -> str:
    """``SupervisorOrManager`` → ``supervisor or manager``; ``hire_date`` → ``hire date``;
    abbreviations written out (``dept`` → department)."""
    out = []
    for w in spoken_words(name):
        out.append(w.upper() if w != "id" and _is_acronym(w) else w)
    return " ".join(out)


def singular(noun: str) -> str:
    """A good-enough English singular for table names (``employees`` → ``employee``)."""
    if not noun:
        return noun
    head, _, last = noun.rpartition(" ")
    low = last.lower()
    if low in _IRREGULAR:
        s = _IRREGULAR[low]
    elif low.endswith("ies") and len(low) > 4:
        s = last[:-3] + "y"
    elif low.endswith(("sses", "xes", "ches", "shes")):
        s = last[:-2]
    elif low.endswith("s") and not low.endswith(("ss", "us", "is")):
        s = last[:-1]
    else:
        s = last
    return f"{head} {s}" if head else s


def entity_noun(table: str) -> str:
    """The noun a table's rows are called by (``project_reports`` → ``project report``)."""
    return singular(humanize(table))


def role_of_fk(fk_column: str) -> str:
    """The role a foreign key plays, from its name (``director_id`` → ``director``)."""
    ws = [w for w in spoken_words(fk_column) if w not in _SURROGATE_TOKENS and w != "fk"]
    return " ".join(ws) if ws else humanize(fk_column)


def is_surrogate_name(column: str) -> bool:
    """True for names of semantically void record identifiers (``id``, ``client_id``, ``uuid``)."""
    ws = words(column)
    return bool(ws) and ws[-1] in _SURROGATE_TOKENS


_NAME_WORDS = {"name", "title", "label", "code", "username", "handle", "designation"}
_NOT_NAMES = {"job", "position", "role"}


def is_name_like(column: str) -> bool:
    """Whether a column's name says it names its row (``Name``, ``project_title``, ``code``).

    ``job_title`` is a property of a person, not the person's name, hence the exclusions.
    """
    ws = spoken_words(column)
    return bool(ws) and ws[-1] in _NAME_WORDS and not (set(ws[:-1]) & _NOT_NAMES)


def param_name(column: str, taken: set[str]) -> str:
    """A bind-parameter name for a column, unique within one template."""
    ascii_name = unicodedata.normalize("NFKD", column).encode("ascii", "ignore").decode()
    base = "_".join(words(ascii_name)) or "p"
    if base[0].isdigit():
        base = "p_" + base
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def slug(text: str) -> str:
    """A URL-safe id part (``Blue Horizon Hotels`` → ``blue-horizon-hotels``)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "-".join(w.lower() for w in _NON_WORD.split(ascii_text) if w) or "x"


_PLURAL_IRREGULAR = {"person": "people", "staff": "staff", "data": "data", "series": "series"}


def plural(noun: str) -> str:
    """A good-enough English plural of a (singular) noun phrase (``company`` → ``companies``)."""
    if not noun:
        return noun
    head, _, last = noun.rpartition(" ")
    low = last.lower()
    if low in _PLURAL_IRREGULAR:
        p = _PLURAL_IRREGULAR[low]
    elif low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        p = last[:-1] + "ies"
    elif low.endswith(("s", "x", "z", "ch", "sh")):
        p = last + "es"
    else:
        p = last + "s"
    return f"{head} {p}" if head else p


_PREPOSITIONS = {"on", "at", "in"}
#: Unit abbreviations a numeric column's name may end in (``weight_kg``): read "weight in kg".
_UNITS = frozenset(
    {"kg", "mg", "lb", "lbs", "km", "cm", "mm", "mi", "ml", "usd", "eur", "gbp", "chf", "pct",
     "ms", "sec", "secs", "min", "mins", "hrs", "kb", "mb", "gb", "tb", "kwh", "kw", "mph", "kmh",
     "m2", "m3", "sqm", "sqft", "ft", "km2", "l", "kl"}
)  # fmt: skip


#: Unit abbreviations a column may be called by alone, as said.
_UNIT_WORDS = {"hrs": "hours", "mins": "minutes", "secs": "seconds", "sec": "seconds"}


#: Past participles without -ed that name an event when a column is called by them, with the
#: event's noun: a ``born`` integer is a birth year, a ``built`` date a construction date.
_IRREGULAR_EVENTS = {
    "born": "birth", "built": "construction", "sold": "sale", "paid": "payment",
    "begun": "start", "begin": "start", "made": "production", "written": "writing",
    "sent": "dispatch", "held": "holding", "died": "death", "lent": "loan", "bought": "purchase",
}  # fmt: skip
#: Regular participles a record's event columns are named by (``hired_on``, ``created_at``,
#: ``shipped``), with the noun English says the event's date with: "the hire date of the
#: employee", never "the hired date". A participle not listed keeps "<participle> date", which
#: parses, where a guessed noun ("found date" for ``founded``) would not.
_EVENT_NOUNS = {
    "hired": "hire", "opened": "opening", "closed": "closing", "issued": "issue",
    "created": "creation", "founded": "founding", "established": "establishment",
    "released": "release", "published": "publication", "launched": "launch",
    "shipped": "shipping", "ordered": "order", "delivered": "delivery", "arrived": "arrival",
    "departed": "departure", "registered": "registration", "enrolled": "enrollment",
    "admitted": "admission", "discharged": "discharge", "joined": "join", "started": "start",
    "ended": "end", "completed": "completion", "approved": "approval", "expired": "expiry",
    "modified": "modification", "updated": "update", "deleted": "deletion",
    "cancelled": "cancellation", "canceled": "cancellation", "confirmed": "confirmation",
    "graduated": "graduation", "signed": "signing", "purchased": "purchase",
    "received": "receipt", "submitted": "submission", "installed": "installation",
    "renewed": "renewal", "retired": "retirement", "terminated": "termination",
    "resigned": "resignation", "married": "marriage", "appointed": "appointment",
    "elected": "election", "acquired": "acquisition", "incorporated": "incorporation",
    "booked": "booking", "returned": "return", "refunded": "refund", "requested": "request",
    "resolved": "resolution", "visited": "visit", "diagnosed": "diagnosis",
    "vaccinated": "vaccination", "inspected": "inspection", "produced": "production",
    "manufactured": "manufacture", "recorded": "recording", "activated": "activation",
}  # fmt: skip
#: Adjectives a date column may be called by alone: "the due date of the loan", never "the due".
_DATE_ADJECTIVES = frozenset({"due", "overdue", "expiry", "valid", "effective"})
_TIME_WORDS = frozenset({"date", "year", "time", "day"})


#: Nouns said in the plural that name an amount, not a count of things: a ``sales`` number is
#: money, never "the number of sales".
_PLURAL_AMOUNTS = frozenset(
    {"sales", "earnings", "savings", "proceeds", "revenues", "costs", "expenses", "wages",
     "taxes", "fees", "dues", "funds", "assets", "news", "data", "series", "staff"}
)  # fmt: skip


#: Plural units a measure is given in: ``duration_minutes`` is a duration, not a count.
_MEASURES = frozenset(
    {"seconds", "minutes", "hours", "days", "weeks", "months", "years", "miles", "metres",
     "meters", "kilometres", "kilometers", "feet", "inches", "degrees", "percent", "mins",
     "secs", "lbs", "kgs"}
)  # fmt: skip


def is_plural_noun(word: str) -> bool:
    """Whether ``word`` reads as a plural noun: its singular is another word whose plural it is
    (passengers, platforms, categories; not status, address, analysis, series)."""
    low = word.lower()
    one = singular(low)
    return len(low) > 3 and one != low and plural(one) == low and low not in _PLURAL_AMOUNTS


def is_count_label(label: str) -> bool:
    """A label that asks how many of something there are ("number of platforms")."""
    return label.startswith("number of ")


def attribute_label(column: str, kind: str | None) -> str:
    """How a column reads as the thing asked for.

    A column named by a bare participle (``released``, ``founded``) names an event, not a value:
    "what the released of the album is" does not parse, "the release date of the album" does.
    Dates get "date", numbers "year" (a number named after an event is almost always its year),
    after the event's noun where English has one for it, else after the participle.
    """
    label = humanize(column)
    ws = label.split()
    if len(ws) == 1 and ws[0] in _UNIT_WORDS:
        return _UNIT_WORDS[ws[0]]  # a column called by its unit alone (``hrs``): "hours"
    dropped_preposition = kind == "date" and len(ws) >= 2 and ws[-1] in _PREPOSITIONS
    if dropped_preposition:
        ws = ws[:-1]  # issued_on, created_at: the event, said by its noun ("issue date")
        label = " ".join(ws)
    event = (_EVENT_NOUNS.get(ws[-1]) or _IRREGULAR_EVENTS.get(ws[-1])) if ws else None
    if event and kind in ("date", "number") and not _TIME_WORDS.intersection(ws):
        # "born date", "hired date" say it worse than the event's own noun, and a bare
        # participle does not parse as a thing asked for ("Born for 'Chinua Achebe'")
        noun = " ".join([*ws[:-1], event])
        return f"{noun} {'date' if kind == 'date' else 'year'}"
    if (
        kind == "number"
        and ws
        and ws[0] not in ("number", "total")
        and ws[-1] not in _MEASURES
        and ws[-1] not in _UNITS
        and is_plural_noun(ws[-1])
    ):
        # a number named by a plural noun counts them: "the number of platforms of the station",
        # never "the platforms of the station" (a count is no list of platforms)
        return f"number of {label}"
    if kind == "number" and len(ws) >= 2 and ws[-1] in _UNITS and ws[-2] != "in":
        return f"{' '.join(ws[:-1])} in {ws[-1]}"  # weight_kg: "weight in kg", not "weight kg"
    if kind == "date" and len(ws) == 1 and ws[0] in _DATE_ADJECTIVES:
        return f"{label} date"
    if dropped_preposition and not _TIME_WORDS.intersection(ws):
        return f"{label} date"  # start_on, shortlisted_at: "start date", "shortlisted date"
    if not ws or not ws[-1].endswith("ed") or len(ws[-1]) < 5:
        return label
    if kind == "date" and "date" not in ws and "time" not in ws:
        return f"{label} date"
    if kind == "number" and "year" not in ws:
        return f"{label} year"
    return label


#: Words a foreign key's name may end in that make it a verb phrase, not a noun (``ShipVia``,
#: ``ReportsTo``, ``managed_by``): the role is a relation, the row it points at needs its own noun.
ROLE_PREPOSITIONS = frozenset(
    {"to", "by", "via", "for", "from", "of", "on", "at", "with", "in", "into", "under"}
)
#: What the row a self-reference points at is called, by the key's words: ``ReportsTo`` names the
#: employee's manager, never "the employee of the employee".
_SELF_ROLES = {
    "reports to": "manager", "report to": "manager", "reports": "manager",
    "managed by": "manager", "manager": "manager", "mgr": "manager", "manager emp": "manager",
    "manager employee": "manager",
    "supervisor": "supervisor", "supervised by": "supervisor", "boss": "boss",
    "superior": "superior", "lead": "lead", "head": "head", "mentor": "mentor",
    "referred by": "referrer", "referrer": "referrer", "sponsor": "sponsor",
    "parent": "parent", "replaced by": "successor", "successor": "successor",
    "predecessor": "predecessor", "reply to": "parent", "in reply to": "parent",
}  # fmt: skip
#: Self-reference roles whose rows pointing back are "direct reports".
HIERARCHY_ROLES = frozenset({"manager", "supervisor", "boss", "superior", "lead", "head"})


def self_role(fk_column: str, noun: str) -> str | None:
    """The role noun of a self-referencing key (``ReportsTo`` → manager, ``parent_id`` → parent
    category), or None when its name gives no role that can be said (``employee_id`` pointing at
    another employee: the wording would be "the employee of the employee")."""
    role = role_of_fk(fk_column)
    if role in _SELF_ROLES:
        r = _SELF_ROLES[role]
        return f"parent {noun}" if r == "parent" else r
    ws = role.split()
    if not ws or ws[-1] in ROLE_PREPOSITIONS or singular(role) == noun:
        return None
    if ws[-1] == noun.split()[-1] and len(ws) > 1:  # parent_category_id → parent category
        return role
    return role


def relation_verb(fk_column: str) -> str | None:
    """The participle phrase a verb-like key names (``ShipVia`` → "shipped via",
    ``assigned_to`` → "assigned to"), or None for a noun key (``CustomerID``)."""
    ws = role_of_fk(fk_column).split()
    if len(ws) < 2 or ws[-1] not in ROLE_PREPOSITIONS:
        return None
    return " ".join([*(participle(w) for w in ws[:-1][:1]), *ws[1:]])


_IRREGULAR_PARTICIPLES = {
    "bear": "born", "buy": "bought", "sell": "sold", "make": "made", "write": "written",
    "take": "taken", "give": "given", "send": "sent", "build": "built", "pay": "paid",
    "begin": "begun", "hold": "held", "lead": "led", "bring": "brought", "find": "found",
    "keep": "kept", "leave": "left", "put": "put", "set": "set", "run": "run", "get": "got",
    "see": "seen", "know": "known", "win": "won", "teach": "taught", "tell": "told",
    "choose": "chosen", "drive": "driven", "ride": "ridden", "fly": "flown", "grow": "grown",
    "draw": "drawn", "throw": "thrown", "break": "broken", "speak": "spoken", "steal": "stolen",
    "freeze": "frozen", "hide": "hidden", "lend": "lent", "spend": "spent", "ship": "shipped",
}  # fmt: skip


def participle(verb: str) -> str:
    """A verb's past participle (``hire`` → hired, ``ship`` → shipped, ``bear`` → born)."""
    v = verb.lower()
    if v in _IRREGULAR_PARTICIPLES:
        return _IRREGULAR_PARTICIPLES[v]
    if v.endswith(("ed", "en")) and len(v) > 4:
        return v
    if v.endswith("e"):
        return v + "d"
    if v.endswith("y") and len(v) > 2 and v[-2] not in "aeiou":
        return v[:-1] + "ied"
    if (
        len(v) >= 3
        and v[-1] not in "aeiouwxy"
        and v[-2] in "aeiou"
        and v[-3] not in "aeiou"
        and sum(ch in "aeiou" for ch in v) == 1
    ):
        return v + v[-1] + "ed"  # one syllable ending consonant-vowel-consonant: ship → shipped
    return v + "ed"
