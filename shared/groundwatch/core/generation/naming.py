"""Human words for database names, so templates read like questions, not like schema dumps.

GRAMMAR's SQL criteria ask for "meaningful and descriptive" columns; the realizer has to say them
the way a person would (``SupervisorOrManager`` → "supervisor or manager", ``start_date`` →
"start date"), and the SQL needs parameter names that are valid bind names.
"""

from __future__ import annotations

import re
import unicodedata

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")
_ACRONYMS = {"id", "ceo", "cfo", "cto", "hr", "it", "uk", "us", "eu", "url", "vat"}
_IRREGULAR = {"people": "person", "staff": "staff", "data": "data", "series": "series"}
_SURROGATE_TOKENS = {"id", "uuid", "guid", "pk", "oid", "rowid"}


def words(name: str) -> list[str]:
    """Split a snake_case, CamelCase or spaced identifier into lower-case words."""
    spaced = _CAMEL.sub(" ", name)
    return [w.lower() for w in _NON_WORD.split(spaced) if w]


def humanize(name: str) -> str:
    """``SupervisorOrManager`` → ``supervisor or manager``; ``hire_date`` → ``hire date``."""
    out = []
    for w in words(name):
        out.append(w.upper() if w in _ACRONYMS and w != "id" else w)
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
    ws = [w for w in words(fk_column) if w not in _SURROGATE_TOKENS and w != "fk"]
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
    ws = words(column)
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
     "ms", "sec", "secs", "min", "mins", "hrs", "kb", "mb", "gb", "tb", "kwh", "kw", "mph", "kmh"}
)  # fmt: skip


def attribute_label(column: str, kind: str | None) -> str:
    """How a column reads as the thing asked for.

    A column named by a bare participle (``released``, ``founded``) names an event, not a value:
    "what the released of the album is" does not parse, "the released date of the album" does.
    Dates get "date", numbers "year" (a number named after an event is almost always its year).
    """
    label = humanize(column)
    ws = label.split()
    if kind == "number" and len(ws) >= 2 and ws[-1] in _UNITS and ws[-2] != "in":
        return f"{' '.join(ws[:-1])} in {ws[-1]}"  # weight_kg: "weight in kg", not "weight kg"
    if kind == "date" and len(ws) >= 2 and ws[-1] in _PREPOSITIONS:
        ws = ws[:-1]  # issued_on, created_at: the event, said as "issued date"
        label = " ".join(ws)
        if ws[-1].endswith(("ed", "en")):
            return f"{label} date"
    if not ws or not ws[-1].endswith("ed") or len(ws[-1]) < 5:
        return label
    if kind == "date" and "date" not in ws and "time" not in ws:
        return f"{label} date"
    if kind == "number" and "year" not in ws:
        return f"{label} year"
    return label
