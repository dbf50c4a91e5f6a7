"""The schema GRAMMAR generates from (§4.1): tables, attributes, keys — plus what the data says.

Plain objects filled by an adapter (``groundwatch.adapters.sources.introspect``) so the rule
generator and the validator stay pure. Besides the declared constraints, a table carries the
distinct counts of its columns and the functional dependencies observed in its rows: the rule
generator only asks "A of K" when every value of K maps to a single value of A, which is the paper's
singular-answer criterion checked against the data instead of hoped for from a prompt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groundwatch.core.generation.naming import is_name_like, is_surrogate_name, spoken_words
from groundwatch.core.model import AnswerType

#: Distinct share of a column *called* a name (``Name``, ``Title``) to name rows: lower than the
#: key ratio, since the fills on a shared name are dropped one by one.
NAME_RATIO = 0.6
#: Longest mean value length of a text column that names rows without being called a name.
MAX_LABEL_LENGTH = 40.0
#: How the two halves of a person's name are called, by the last words of their column names.
_FIRST_NAMES = (("first", "name"), ("given", "name"), ("forename",), ("firstname",))
_LAST_NAMES = (("last", "name"), ("family", "name"), ("surname",), ("lastname",))


def _ends_in(ws: list[str], forms: tuple[tuple[str, ...], ...]) -> bool:
    return any(tuple(ws[-len(f) :]) == f for f in forms)


@dataclass(frozen=True, slots=True)
class ForeignKeyInfo:
    """``column`` of this table references ``ref_table.ref_column`` (FK(Ti.Ak → Tj.Ah))."""

    column: str
    ref_table: str
    ref_column: str


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One attribute with its answer kind and data profile.

    ``kind`` is None for types an answer cannot be compared as (blobs, JSON, arrays): such columns
    are never asked about. ``samples``: a few values as text, read only when steering needs to
    tell personal data by its values (e-mail addresses, phone numbers). ``flag``: a yes/no column
    (a declared boolean, or integers that are only ever 0 and 1), asked as a yes/no question with
    a yes/no answer. ``avg_length``: the mean length of a text column's values (None: not
    profiled), which tells a short label from free text.
    """

    name: str
    kind: AnswerType | None
    sql_type: str = ""
    nullable: bool = True
    primary_key: bool = False
    distinct: int = 0
    non_null: int = 0
    unique: bool = False
    samples: tuple[str, ...] = ()
    flag: bool = False
    avg_length: float | None = None


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A table schema S_i = (T_i, {A_1..A_m}, C) and its data profile.

    ``fd_violations[(k, a)]`` = number of values of column ``k`` that map to more than one value of
    column ``a`` (NULL counted as a value); 0 means ``k → a`` holds in the data. Pairs that were not
    profiled are absent. ``pair_profile[(k1, k2)] = (combinations, single)``: how many distinct
    (k1, k2) value pairs occur and how many of them map to a single row identifier — whether two
    conditions together give a single answer.
    """

    name: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKeyInfo, ...] = ()
    rows: int = 0
    fd_violations: Mapping[tuple[str, str], int] = field(default_factory=dict)
    pair_profile: Mapping[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    key_ratio: float = 0.9
    #: how many full names (:meth:`full_name`) more than one row shares (0: not profiled or none)
    repeated_names: int = 0

    def column(self, name: str) -> ColumnInfo | None:
        for c in self.columns:
            if c.name == name:
                return c
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    @property
    def fk_columns(self) -> set[str]:
        return {fk.column for fk in self.foreign_keys}

    def is_surrogate(self, col: ColumnInfo) -> bool:
        """Semantically void identifiers (the paper's "record identifiers"): never asked about.

        An integer primary key, any ``*_id``/``uuid``-style name, and foreign-key columns (their
        meaning is reached through a join to the row they point at, not by reading the number).
        """
        if col.primary_key and col.kind is AnswerType.NUMBER:
            return True
        return is_surrogate_name(col.name) or col.name in self.fk_columns

    def descriptive(self) -> list[ColumnInfo]:
        """Columns fit to be selected or used as conditions: meaningful, comparable, populated."""
        return [
            c
            for c in self.columns
            if c.kind is not None and not self.is_surrogate(c) and c.non_null > 0
        ]

    def is_key_like(self, col: ColumnInfo, ratio: float | None = None) -> bool:
        """A text column that names a row: declared unique, or name-like and (nearly) distinct.

        Distinctness alone is not enough: in a small table every industry may happen to be
        distinct, yet "the client in industry X" has several answers as soon as a second client in
        X is added (the paper's multiplicity example, Appendix D.1).
        """
        if col.kind is AnswerType.NUMBER and not col.flag and not self.is_surrogate(col):
            return self._numbered(col)
        if col.kind is not AnswerType.TEXT or self.is_surrogate(col) or col.non_null < 2:
            return False
        if col.non_null * 2 < self.rows:
            return False
        if col.unique:
            return True
        share = self.key_ratio if ratio is None else ratio
        if is_name_like(col.name):
            # a name column a few rows share ("Music" twice among ten playlists) still names
            # rows: the fills on a shared name are dropped where their answers differ, the rest
            # keep the template (a "Name" column just below the ratio used to yield nothing)
            return col.distinct >= min(share, NAME_RATIO) * col.non_null
        return col.distinct >= share * col.non_null and self._sole_label(col)

    def _numbered(self, col: ColumnInfo) -> bool:
        """A number people give a row by (``order_no``, ``invoice_number``, ``po_num``): unique
        in the data and named a number, in a table that has no text column naming its rows —
        an order is "order 10248" when nothing else names it."""
        ws = spoken_words(col.name)
        if len(ws) < 2 or ws[-1] != "number" or col.non_null < 2 or col.non_null * 2 < self.rows:
            return False
        if col.distinct != col.non_null:
            return False
        return not any(
            self.is_key_like(c) for c in self.columns if c.kind is AnswerType.TEXT and c != col
        )

    def _sole_label(self, col: ColumnInfo) -> bool:
        """The only meaningful text column of a table, with short values: the row's name even
        when its column is not called one (``TerritoryDescription``: 'Boston', 'Westboro').

        Not in a table that relates rows of two others (an appointment of a patient with a
        physician, an order of a customer by an employee): such a row is told by its ends, and
        its one text column says what happened ('Chest pain'), which nobody calls it by."""
        if col.avg_length is None or col.avg_length > MAX_LABEL_LENGTH:
            return False
        if len({fk.ref_table for fk in self.foreign_keys if fk.ref_table != self.name}) >= 2:
            return False
        texts = [
            c
            for c in self.columns
            if c.kind is AnswerType.TEXT and not self.is_surrogate(c) and c.non_null > 0
        ]
        return texts == [col]

    def determines(self, key: str, attr: str) -> bool | None:
        """Whether ``key → attr`` holds in the data (None if it was not profiled)."""
        v = self.fd_violations.get((key, attr))
        return None if v is None else v == 0

    def full_name(self) -> tuple[ColumnInfo, ColumnInfo] | None:
        """A person's first and last name columns, when the table has both filled in: people
        are asked about by their full name ("Maria Chen"), never by one half of it."""
        first = last = None
        for c in self.columns:
            if c.kind is not AnswerType.TEXT or c.flag or self.is_surrogate(c):
                continue
            if c.non_null < 2 or c.non_null * 2 < self.rows:
                continue
            ws = spoken_words(c.name)
            if first is None and _ends_in(ws, _FIRST_NAMES):
                first = c
            elif last is None and _ends_in(ws, _LAST_NAMES):
                last = c
        return (first, last) if first is not None and last is not None else None

    def name_columns(self) -> tuple[ColumnInfo, ...]:
        """The columns a question names a row by: a person's first and last name, else the
        :meth:`identifier` (empty: the rows have no name)."""
        full = self.full_name()
        if full is not None:
            return full
        ident = self.identifier()
        return (ident,) if ident is not None else ()

    def identifier(self) -> ColumnInfo | None:
        """The column that names a row (the most distinct key-like one), used for join answers."""
        full = self.full_name()
        if full is not None:
            return full[1]  # where one column must do, a person's family name
        keys = [c for c in self.columns if self.is_key_like(c)]
        if not keys:
            return None
        named = [c for c in keys if is_name_like(c.name)]
        # a name or title before a code: a department is 'Finance' to a person, not 'FIN'
        called = [c for c in named if spoken_words(c.name)[-1] in ("name", "title")]
        return max(called or named or keys, key=lambda c: (c.distinct, -self.columns.index(c)))


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """The database schema S = {S_1..S_N}, with the SQL dialect templates are rendered in.

    ``excluded`` / ``excluded_tables``: what steering removed, lower-cased, with the reason, so a
    template that uses them is rejected for that reason (see :mod:`.steering`).
    """

    tables: tuple[TableInfo, ...]
    dialect: str = "sqlite"
    excluded: Mapping[tuple[str, str], str] = field(default_factory=dict)
    excluded_tables: Mapping[str, str] = field(default_factory=dict)
    #: ``(table, column)`` naming columns some of whose values also name a row of another table
    #: ('Mitchell' an employee's and a customer's last name): questions by them say which kind
    #: of row they mean ("address for employee 'Mitchell'").
    shared_names: frozenset[tuple[str, str]] = frozenset()
    #: The schema's own abbreviations and what they stand for (``appt`` → appointment, by its
    #: longer names: :mod:`~groundwatch.core.generation.abbreviations`); None: not derived yet.
    abbreviations: Mapping[str, str] | None = None
    #: Tables whose rows are physical things no other row is in (pets, drugs, products, by the
    #: lexicon's sense of their noun): a link's row is "of pet X with medication Y", never "in"
    #: one. Empty without a lexicon.
    things: frozenset[str] = frozenset()

    def table(self, name: str) -> TableInfo | None:
        for t in self.tables:
            if t.name == name:
                return t
        low = name.lower()
        for t in self.tables:
            if t.name.lower() == low:
                return t
        return None

    def describe(self, names: tuple[str, ...] | None = None) -> str:
        """The schema as text for the SQL-template prompt: names, types and keys, never rows."""
        lines = []
        for t in self.tables:
            if names is not None and t.name not in names:
                continue
            cols = ", ".join(f"{c.name} ({c.sql_type or (c.kind or 'other')})" for c in t.columns)
            lines.append(f"Table {t.name}: {cols}")
            if t.primary_key:
                lines.append(f"  primary key: {', '.join(t.primary_key)}")
            for fk in t.foreign_keys:
                lines.append(
                    f"  foreign key: {t.name}.{fk.column} -> {fk.ref_table}.{fk.ref_column}"
                )
        return "\n".join(lines)
