"""Which parts of a schema generation may touch: tables and columns in or out, personal data out.

Every question the generator writes is sent to the endpoint under test, with the placeholder values
in it, and every answer is a value it read. A column that holds personal data (e-mail addresses,
phone numbers, postal addresses, birth dates, national ids) must therefore be kept out of both,
and so must tables a team does not want probed. Steering removes them from the schema the rule
generator sees, and remembers what it removed, so a hand-written or LLM template that uses them is
rejected with that reason instead of "unknown column".

Patterns are shell globs, matched case-insensitively: a table pattern against the table name, a
column pattern against ``table.column`` (a pattern without a dot against the column name in any
table), e.g. ``people.*Name`` or ``*email*``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from groundwatch.core.generation.naming import words
from groundwatch.core.generation.schema import ColumnInfo, SchemaInfo, TableInfo

#: Name words that say a column holds personal data (split like every identifier: ``DateOfBirth``
#: → date, of, birth). Multi-word entries must all occur.
_PII_NAME_WORDS: tuple[frozenset[str], ...] = tuple(
    frozenset(w.split())
    for w in (
        "email",
        "e mail",
        "mail",
        "phone",
        "telephone",
        "mobile",
        "cell",
        "fax",
        "address",
        "street",
        "zip",
        "postcode",
        "postal",
        "birth",
        "birthday",
        "birthdate",
        "dob",
        "ssn",
        "social security",
        "national",
        "passport",
        "tax",
        "iban",
        "bic",
        "nino",
        "insurance number",
        "licence number",
        "license number",
    )
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_PHONE = re.compile(r"\+?[\d\s().\-/]{7,}")
_NATIONAL_ID = re.compile(
    r"\d{3}-\d{2}-\d{4}"  # US social security number
    r"|[A-Z]{2}\d{6}[A-D]"  # UK national insurance number
    r"|[A-Z]{2}\d{2}[A-Z0-9]{11,30}"  # IBAN
)


@dataclass(frozen=True, slots=True)
class Steering:
    """What generation may use. Empty ``include_tables`` means every table."""

    include_tables: tuple[str, ...] = ()
    exclude_tables: tuple[str, ...] = ()
    exclude_columns: tuple[str, ...] = ()
    pii: bool = False

    @property
    def active(self) -> bool:
        return bool(self.include_tables or self.exclude_tables or self.exclude_columns or self.pii)


def split_patterns(values: Iterable[str] | None) -> tuple[str, ...]:
    """``["a,b", "c"]`` → ``("a", "b", "c")``: options may be repeated or comma-separated."""
    out: list[str] = []
    for v in values or ():
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def _match(name: str, patterns: Sequence[str]) -> bool:
    low = name.lower()
    return any(fnmatchcase(low, p.lower()) for p in patterns)


def table_allowed(name: str, steering: Steering) -> bool:
    if steering.include_tables and not _match(name, steering.include_tables):
        return False
    return not _match(name, steering.exclude_tables)


def column_excluded(table: str, column: str, patterns: Sequence[str]) -> bool:
    qualified = f"{table}.{column}"
    for p in patterns:
        target = qualified if "." in p else column
        if fnmatchcase(target.lower(), p.lower()):
            return True
    return False


def looks_personal(column: ColumnInfo) -> str | None:
    """Why a column looks like personal data (its name, or the values sampled from it), or None."""
    ws = set(words(column.name))
    for need in _PII_NAME_WORDS:
        if need <= ws:
            return f"name ({' '.join(sorted(need))})"
    values = [v for v in column.samples if v.strip()]
    if not values:
        return None
    for label, pattern in (("e-mail", _EMAIL), ("national id", _NATIONAL_ID), ("phone", _PHONE)):
        hits = sum(1 for v in values if pattern.fullmatch(v.strip()))
        if label == "phone":
            hits = sum(
                1
                for v in values
                if _PHONE.fullmatch(v.strip()) and sum(ch.isdigit() for ch in v) >= 7
            )
        if hits * 2 > len(values):
            return f"values ({label})"
    return None


def steer(schema: SchemaInfo, steering: Steering) -> SchemaInfo:
    """The schema without the tables and columns ``steering`` keeps out (recorded as excluded).

    Foreign keys to or from a removed column or table go too: a join through them would read it.
    """
    if not steering.active:
        return schema
    excluded: dict[tuple[str, str], str] = dict(schema.excluded)
    dropped_tables: dict[str, str] = dict(schema.excluded_tables)
    kept: list[TableInfo] = []
    for t in schema.tables:
        if not table_allowed(t.name, steering):
            dropped_tables[t.name.lower()] = "excluded table"
            continue
        kept.append(t)
    tables: list[TableInfo] = []
    for t in kept:
        cols: list[ColumnInfo] = []
        for c in t.columns:
            reason = None
            if column_excluded(t.name, c.name, steering.exclude_columns):
                reason = "excluded column"
            elif steering.pii and (why := looks_personal(c)) is not None:
                reason = f"personal data: {why}"
            if reason is None:
                cols.append(c)
            else:
                excluded[(t.name.lower(), c.name.lower())] = reason
        tables.append(replace(t, columns=tuple(cols)))
    names = {t.name.lower() for t in tables}

    def gone(table: str, column: str) -> bool:
        return table.lower() not in names or (table.lower(), column.lower()) in excluded

    out: list[TableInfo] = []
    for t in tables:
        fks = tuple(
            fk
            for fk in t.foreign_keys
            if not gone(t.name, fk.column) and not gone(fk.ref_table, fk.ref_column)
        )
        left = {c.name for c in t.columns}
        out.append(
            replace(
                t,
                foreign_keys=fks,
                primary_key=t.primary_key if set(t.primary_key) <= left else (),
                fd_violations={
                    k: v for k, v in t.fd_violations.items() if k[0] in left and k[1] in left
                },
                pair_profile={
                    k: v for k, v in t.pair_profile.items() if k[0] in left and k[1] in left
                },
            )
        )
    return replace(schema, tables=tuple(out), excluded=excluded, excluded_tables=dropped_tables)
