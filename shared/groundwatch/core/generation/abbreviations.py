"""Abbreviations a schema writes out itself: ``dept_id`` pointing at ``departments``, an ``emp``
where a table is called ``employees``, a ``qty`` next to a ``quantity``.

The word list (:data:`~groundwatch.core.generation.naming.ABBREVIATIONS`) knows the forms every
schema uses; each schema has its own too (``appt``, ``pat``, ``presc``), and the only evidence of
what they stand for is the schema's own longer names. A short word is read as one of them when

- a foreign key says so: the key's last word abbreviates the noun of the table it references
  (``major_dept_id`` → ``departments``: department; ``po_id`` → ``purchase_orders``: the
  initials), or a column's first word is its own table's initials (``po_no`` in
  ``purchase_orders``);
- or exactly one longer word of the schema's names is made from it the way abbreviations are
  made: cut short (``prod`` → product) or contracted, keeping the first and the last letter
  (``qty`` → quantity, ``mgr`` → manager).

Guards against reading a word as an abbreviation it is not, on the names' evidence: a short word
must have three letters; a word of English (one the lexicon has senses for, when there is one:
``post``, ``car``, ``pat``), a table's plural name (``cars``) or a common short word (``at``,
``no``) is never expanded; a cut must leave at least two letters that are neither an English
ending, with or without a doubled consonant (``ship`` is no short ``shipment`` or ``shipper``,
``book`` no short ``booking``), nor a word of the schema's (``post`` in ``postcode``); two
candidate expansions mean none. A key's evidence is stronger (``pat_id`` pointing at
``patients`` is the patient), so there only the form is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Hashable, Mapping
from types import MappingProxyType

from groundwatch.core.generation.naming import (
    ABBREVIATIONS,
    ROLE_PREPOSITIONS,
    singular,
    words,
)
from groundwatch.core.generation.schema import SchemaInfo, TableInfo

#: Endings that turn an English word into another (``ship`` + ment, ``paint`` + er): a word
#: followed by one of them in a longer name is that word, not a cut of the longer one.
_ENDINGS = frozenset(
    {"s", "es", "d", "ed", "er", "ers", "or", "ors", "ing", "ings", "ment", "ments", "al", "als",
     "ion", "ions", "ation", "ations", "ist", "ists", "ly", "y", "ery", "ship", "ness", "able",
     "ful", "age", "ure", "ee", "ees", "ive", "ity", "an", "ian", "ism", "ance", "ence", "let",
     "ette", "en", "est", "ish", "ize", "ise", "ic", "ical", "ary", "ory", "dom", "hood", "less",
     "th", "ant", "ent", "ents", "ants", "ies", "ier", "iers", "ia", "ial", "ual"}
)  # fmt: skip
#: Short words of English that read the same in any name (``created_at``, ``order_no``).
_COMMON = frozenset(
    {"a", "an", "and", "as", "is", "it", "me", "my", "no", "not", "or", "so", "the", "up", "us",
     "we", "yes", "all", "any", "day", "new", "old", "one", "own", "per", "set", "top", "low",
     "max", "min", "sum", "key", "type", "kind", "name", "code", "date", "time", "year", "flag",
     "count", "total", "last", "first", "next", "prev", "main", "home", "work", "full", "part"}
    | ROLE_PREPOSITIONS
)  # fmt: skip
_SURROGATE = frozenset({"id", "uuid", "guid", "pk", "fk", "oid", "rowid", "key"})
#: Words a key's name may end in after the role, naming the referenced column's kind
#: (``med_cd`` → medications, ``ward_no``): the role is the word before them.
_KEY_KINDS = _SURROGATE | {"cd", "code", "no", "num", "nbr", "number", "ref"}


def _is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def abbreviates(short: str, word: str, others: Container[str] = ()) -> bool:
    """Whether ``short`` is made from ``word`` the way abbreviations are: cut short, leaving no
    English ending (``prod``: product, never ``ship``: shipment or shipper) and no word of
    ``others`` (``post``: never postcode), or contracted to letters of it that keep its first and
    last (``qty``: quantity, ``dept``: department)."""
    if len(short) < 2 or len(word) < len(short) + 2 or short[0] != word[0]:
        return False
    if word.startswith(short):
        rest = word[len(short) :]
        if rest[0] == short[-1]:  # ship|p|er: a doubled consonant before an ending
            rest = rest[1:]
        return rest not in _ENDINGS and rest not in others
    return short[-1] == word[-1] and _is_subsequence(short, word)


def _initials(noun_words: list[str]) -> str:
    return "".join(w[0] for w in noun_words) if len(noun_words) >= 2 else ""


def schema_abbreviations(
    schema: SchemaInfo, is_word: Callable[[str], bool] | None = None
) -> dict[str, str]:
    """The schema's own abbreviations and what they stand for, by the evidence of its names (the
    module's rules); forms the word list already knows are left to it unless a key says
    otherwise. ``is_word`` tells a word of English (the lexicon has senses for it), which the
    names' evidence never expands."""
    found: dict[str, str] = {}
    names: list[list[str]] = []
    for t in schema.tables:
        names.append(words(t.name))
        names.extend(words(c.name) for c in t.columns)
    # a table called by a plural is called by a noun (cars), never by an abbreviation
    plurals = {
        ws[-1] for t in schema.tables if (ws := words(t.name)) and singular(ws[-1]) != ws[-1]
    }
    nouns = {t.name: [*ws[:-1], singular(ws[-1])] for t in schema.tables if (ws := words(t.name))}
    for t in schema.tables:
        _key_evidence(t, nouns, found)
        _own_initials(t, nouns, found)
    _names_evidence(names, plurals, found, is_word)
    return found


def _key_evidence(t: TableInfo, nouns: Mapping[str, list[str]], found: dict[str, str]) -> None:
    """A key's evidence: the key's last word abbreviates (or is the initials of) its target's
    noun."""
    for fk in t.foreign_keys:
        ws = words(fk.column)
        while ws and ws[-1] in _KEY_KINDS:
            ws = ws[:-1]
        noun = nouns.get(fk.ref_table)
        if not ws or not noun or ws[-1] in _COMMON:
            continue
        short = ws[-1]
        if short == noun[-1] or singular(short) == noun[-1]:
            continue
        if len(noun) >= 2 and short == _initials(noun):
            found[short] = " ".join(noun)
        elif abbreviates(short, noun[-1]):
            found[short] = noun[-1]


def _own_initials(t: TableInfo, nouns: Mapping[str, list[str]], found: dict[str, str]) -> None:
    """A column named by its own table's initials (po_no in purchase_orders)."""
    own = nouns.get(t.name, [])
    initials = _initials(own)
    if initials and initials not in _COMMON:
        for c in t.columns:
            cws = words(c.name)
            if len(cws) >= 2 and cws[0] == initials:
                found.setdefault(initials, " ".join(own))


def _names_evidence(
    names: list[list[str]],
    plurals: set[str],
    found: dict[str, str],
    is_word: Callable[[str], bool] | None,
) -> None:
    """The names' evidence: exactly one longer word of the schema's names it is made from."""
    vocabulary = {singular(w) for ws in names for w in ws} | {w for ws in names for w in ws}
    for short in sorted({w for ws in names for w in ws}):
        if (
            short in found
            or short in ABBREVIATIONS
            or short in _COMMON
            or short in _SURROGATE
            or short in plurals
            or len(short) < 3
            or not short.isalpha()
            or (is_word is not None and is_word(short))
        ):
            continue
        full = _expansions(short, vocabulary)
        if len(full) == 1:
            found[short] = full.pop()


def _expansions(short: str, vocabulary: Collection[str]) -> set[str]:
    out = {w for w in vocabulary if w.isalpha() and abbreviates(short, w, vocabulary)}
    # a plural and its singular are one word (employees, employee)
    return {w for w in out if singular(w) == w or singular(w) not in out}


def of_schema(schema: SchemaInfo | None) -> Mapping[str, str]:
    """The abbreviations introspection found for ``schema`` (with the lexicon's guard), derived
    here without it for a schema built otherwise; nothing without a schema."""
    if schema is None:
        return {}
    if schema.abbreviations is not None:
        return schema.abbreviations
    key = tuple((t.name, tuple(c.name for c in t.columns), t.foreign_keys) for t in schema.tables)
    found = _DERIVED.get(key)
    if found is None:  # derived once per set of names: a file's templates are validated one by one
        if len(_DERIVED) >= 16:
            _DERIVED.clear()
        found = _DERIVED[key] = MappingProxyType(schema_abbreviations(schema))
    return found


_DERIVED: dict[Hashable, Mapping[str, str]] = {}
